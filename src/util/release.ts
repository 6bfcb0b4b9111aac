/**
 * Give a large typed array's memory back to the system now: the whole buffer
 * it starts, which the caller owns (a view of the first bytes of a builder's
 * buffer frees the buffer). V8 frees an ArrayBuffer's memory only when a
 * collection finds its last view gone, and at a million entries the arrays a
 * cycle is done with (its script's bytes, hash slots, listings: tens of MB
 * each) stayed resident until the collection after the cycle, stacked on top
 * of what the next step allocates. Detaching the buffer (`transfer(0)`) frees
 * it at once; every view of it reads as empty afterwards, so only the owner
 * of an array calls this, once nothing reads it.
 *
 * Buffers under 64 KiB are left alone: they may live on V8's heap or be
 * Node's shared Buffer pool (8 KiB; detaching it would empty every small
 * Buffer that shares it), and are not worth it.
 */
const MIN_BYTES = 64 * 1024;

type Transferable = ArrayBuffer & { transfer?: (length?: number) => ArrayBuffer };

export function releaseArray(a: ArrayBufferView | undefined): void {
  if (a === undefined) return;
  const buffer = a.buffer as Transferable;
  // Only a view from the buffer's start: one further in is a part of something else's memory.
  if (a.byteOffset !== 0 || buffer.byteLength < MIN_BYTES) return;
  if (typeof buffer.transfer !== 'function' || (buffer as { detached?: boolean }).detached) return;
  try {
    buffer.transfer(0);
  } catch {
    // Not detachable (Node's Buffer pool is made so): left to the collector, as before.
  }
}

/**
 * A typed array with room for `length` elements and the first elements of `a`, by `transfer`:
 * the allocator can grow or shrink it in place, and the old memory is freed at once instead of
 * at the next collection (growing columns to a million entries by copies left every smaller
 * copy behind until then).
 */
export function resizeArray<T extends Uint8Array | Uint32Array | Int32Array | Float64Array>(a: T, length: number, make: (buffer: ArrayBuffer) => T): T {
  const buffer = a.buffer as Transferable;
  if (a.byteOffset === 0 && buffer.byteLength === a.byteLength && typeof buffer.transfer === 'function') {
    return make(buffer.transfer(length * a.BYTES_PER_ELEMENT));
  }
  const next = make(new ArrayBuffer(length * a.BYTES_PER_ELEMENT));
  next.set(a.subarray(0, Math.min(a.length, length)) as never);
  return next;
}

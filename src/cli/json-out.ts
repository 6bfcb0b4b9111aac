/**
 * `JSON.stringify(value, null, 2) + "\n"`, produced piece by piece. `plan --json`
 * and `sync --once --json` at a million indicators print a hundred thousand
 * entries; one string of the whole document (plus its copy on the way out) was
 * the largest allocation of the run. Here the caller takes 64 KiB at a time and
 * waits for the reader (stdout is asynchronous when it is a pipe: written all
 * at once, the whole document would queue in memory behind a slow reader).
 *
 * Same text as JSON.stringify for JSON data: `toJSON` honoured, `undefined`,
 * functions and symbols skipped in objects and `null` in arrays, non-finite
 * numbers as `null` (all through JSON.stringify on the leaves).
 */
const PIECE = 64 * 1024;

export function* jsonPieces(value: unknown): Generator<string, void, undefined> {
  const parts: string[] = [];
  let size = 0;
  const emit = (s: string) => {
    parts.push(s);
    size += s.length;
  };
  for (const _ of emitValue(value, '', '', emit, true)) {
    if (size >= PIECE) {
      yield parts.join('');
      parts.length = 0;
      size = 0;
    }
  }
  emit('\n');
  yield parts.join('');
}

/** Whether JSON.stringify would leave this property out of an object. */
function omitted(v: unknown): boolean {
  return v === undefined || typeof v === 'function' || typeof v === 'symbol';
}

/** Emits the text of `value`; yields now and then (after each element) so the caller can cut pieces. */
function* emitValue(value: unknown, key: string, indent: string, emit: (s: string) => void, top = false): Generator<void, void, undefined> {
  let v = value;
  if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function') {
    v = (v as { toJSON(k: string): unknown }).toJSON(key);
  }
  if (v === null || typeof v !== 'object') {
    // Leaves (and, at the top, a value JSON.stringify answers undefined for, written as nothing).
    emit(omitted(v) ? (top ? '' : 'null') : JSON.stringify(v));
    return;
  }
  const inner = `${indent}  `;
  if (Array.isArray(v)) {
    if (v.length === 0) return emit('[]');
    emit('[');
    for (let i = 0; i < v.length; i++) {
      emit(i === 0 ? `\n${inner}` : `,\n${inner}`);
      yield* emitValue(v[i], String(i), inner, emit);
      yield;
    }
    emit(`\n${indent}]`);
    return;
  }
  let first = true;
  for (const k of Object.keys(v)) {
    const item = (v as Record<string, unknown>)[k];
    if (omitted(item)) continue;
    emit(first ? `{\n${inner}` : `,\n${inner}`);
    first = false;
    emit(`${JSON.stringify(k)}: `);
    yield* emitValue(item, k, inner, emit);
    yield;
  }
  emit(first ? '{}' : `\n${indent}}`);
}

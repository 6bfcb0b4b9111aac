import { describe, expect, it } from 'vitest';
import { releaseArray, resizeArray } from '../../../src/util/release.js';

const arrayBuffers = () => process.memoryUsage().arrayBuffers;

describe('releaseArray', () => {
  it('gives a large array’s memory back at once, not at the next collection', () => {
    const a = new Float64Array(4_000_000).fill(1); // 32 MB
    const before = arrayBuffers();
    releaseArray(a);
    expect(before - arrayBuffers()).toBeGreaterThanOrEqual(32_000_000);
    expect(a.length).toBe(0); // its owner must not read it again: it is empty now
    releaseArray(a); // a second call is harmless
  });

  it('frees the whole buffer of a view from its start (a builder’s bytes), and nothing for a view further in', () => {
    const whole = new Uint8Array(1 << 20);
    releaseArray(whole.subarray(1, 100));
    expect(whole.length).toBe(1 << 20);
    releaseArray(whole.subarray(0, 100));
    expect(whole.length).toBe(0);
  });

  it('leaves small arrays and Node’s shared Buffer pool alone', () => {
    const pooled = Buffer.from('192.0.2.1');
    const neighbour = Buffer.from('198.51.100.7');
    releaseArray(pooled);
    releaseArray(new Uint32Array(pooled.buffer, 0, 4));
    expect(pooled.toString()).toBe('192.0.2.1');
    expect(neighbour.toString()).toBe('198.51.100.7');
    const small = new Uint32Array([1, 2, 3]);
    releaseArray(small);
    expect([...small]).toEqual([1, 2, 3]);
  });
});

describe('resizeArray', () => {
  it('keeps the first elements, zero-fills the new room and frees the old memory', () => {
    const a = new Uint32Array(1_000_000).map((_, i) => i);
    const b = resizeArray(a, 1_500_000, (buf) => new Uint32Array(buf));
    expect(b.length).toBe(1_500_000);
    expect([b[0], b[999_999], b[1_000_000], b[1_499_999]]).toEqual([0, 999_999, 0, 0]);
    expect(a.length).toBe(0);
    const c = resizeArray(b, 10, (buf) => new Uint32Array(buf));
    expect([...c]).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('copies a view that does not own its buffer, leaving the buffer as it was', () => {
    const whole = new Float64Array([1, 2, 3, 4]);
    const part = whole.subarray(1, 3);
    const grown = resizeArray(part, 4, (buf) => new Float64Array(buf));
    expect([...grown]).toEqual([2, 3, 0, 0]);
    expect([...whole]).toEqual([1, 2, 3, 4]);
  });
});

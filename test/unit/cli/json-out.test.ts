import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonPieces } from '../../../src/cli/json-out.js';

const written = (value: unknown): { text: string; pieces: string[] } => {
  const pieces = [...jsonPieces(value)];
  return { text: pieces.join(''), pieces };
};

describe('writeJson: JSON.stringify(value, null, 2) in pieces', () => {
  it('gives exactly JSON.stringify’s text for any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(written(v).text).toBe(`${JSON.stringify(v, null, 2)}\n`);
      }),
      { numRuns: 500 },
    );
  });

  it('follows JSON.stringify for undefined, functions, toJSON, Dates and non-finite numbers', () => {
    const v = {
      a: undefined,
      f: () => 1,
      d: new Date(0),
      list: [undefined, () => 2, NaN, Infinity, -0],
      nested: { toJSON: (k: string) => `key ${k}` },
      empty: { gone: undefined },
      arr: [],
    };
    expect(written(v).text).toBe(`${JSON.stringify(v, null, 2)}\n`);
  });

  it('writes a large document in bounded pieces, never as one string', () => {
    const plan = { agid: 'a', entries: Array.from({ length: 20_000 }, (_, i) => ({ ip: `10.0.${i >> 8}.${i & 255}`, reason: 'score', score: i / 7, expires: null })) };
    const { text, pieces } = written(plan);
    expect(text).toBe(`${JSON.stringify(plan, null, 2)}\n`);
    expect(pieces.length).toBeGreaterThan(10);
    expect(Math.max(...pieces.map((p) => p.length))).toBeLessThan(64 * 1024 + 200);
  });
});

import type { DnsApplyResult } from './types.js';

/** The apply result of a backend that replaces its whole file: `before` the names it held, `sorted` those it holds now. */
export function countChanges(before: readonly string[], sorted: readonly string[]): DnsApplyResult {
  const had = new Set(before);
  const want = new Set(sorted);
  return { added: sorted.filter((n) => !had.has(n)).length, removed: before.filter((n) => !want.has(n)).length, total: sorted.length, foreign: [], leftAlone: [] };
}

import type { DnsApplyResult, DnsPlugin, DnsPluginName } from './types.js';

/** The apply result of a backend that replaces its whole file: `before` the names it held, `sorted` those it holds now. */
export function countChanges(before: readonly string[], sorted: readonly string[]): DnsApplyResult {
  const had = new Set(before);
  const want = new Set(sorted);
  return { added: sorted.filter((n) => !had.has(n)).length, removed: before.filter((n) => !want.has(n)).length, total: sorted.length, foreign: [], leftAlone: [] };
}

/**
 * A backend whose whole state is one file of the agent's (rpz, dnsmasq): `read` answers the
 * names in it, `write` puts exactly the given names there (sorted, no duplicates) and answers
 * those it held before. `flush` writes none: the file is emptied, never deleted, since the
 * resolver's configuration names it.
 */
export function wholeFileBackend(name: DnsPluginName, o: { read: () => string[]; write: (sorted: readonly string[]) => Promise<string[]> }): DnsPlugin {
  return {
    name,
    async list() {
      return o.read();
    },
    async apply(names) {
      const sorted = [...new Set(names)].sort();
      return countChanges(await o.write(sorted), sorted);
    },
    async flush() {
      await o.write([]);
    },
  };
}

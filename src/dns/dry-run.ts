import { readOwned, writeOwned } from './owned-file.js';
import { parseRpzNames, renderRpzZone } from './render.js';
import type { DnsAnswer, DnsPlugin } from './types.js';
import { countChanges } from './whole-file.js';

/** Renders the blocked names as an RPZ zone to a file in the state dir; touches no resolver. */
export function createDnsDryRun(o: { output: string; answer: DnsAnswer; now: () => number }): DnsPlugin {
  const render = (names: readonly string[]) => renderRpzZone(names, o.answer, o.now());
  const emit = (text: string) => writeOwned(o.output, text);
  return {
    name: 'dry-run',
    async list() {
      try {
        // readOwned: a FIFO put there must not hang a dry run either.
        return parseRpzNames(readOwned(o.output));
      } catch {
        return [];
      }
    },
    async apply(names) {
      const sorted = [...new Set(names)].sort();
      const before = await this.list();
      emit(render(sorted));
      return countChanges(before, sorted);
    },
    async flush() {
      emit(render([]));
    },
  };
}

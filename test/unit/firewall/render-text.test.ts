import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { kernelColumns, type KernelEntry } from '../../../src/firewall/entries.js';
import { renderIpsetCreate, renderIpsetMarker, renderIpsetDelta, renderIpsetFull } from '../../../src/firewall/ipset/text.js';
import { TextBuilder } from '../../../src/util/text-builder.js';
import { fromNumber } from '../../../src/net/ipv4.js';

const arbEntry = fc.record({
  cidr: fc.tuple(fc.nat(0xffffffff), fc.integer({ min: 0, max: 32 })).map(([v, p]) => fromNumber(v, p)),
  timeout: fc.option(fc.oneof(fc.integer({ min: 1, max: 2_147_483 }), fc.constantFrom(0, 9, 10, 99, 100, 1e21, 2.5, -3)), { nil: undefined }),
});
const arbName = fc.oneof(fc.constantFrom('s', 'wcf-blocklist', 'wcf-blocklist-tmp'), fc.string({ maxLength: 8 }));

/** The rendering as lines joined, as it was written before TextBuilder (and before columns). */
function joined(head: string[], setName: string, entries: KernelEntry[], tail: string[]): string {
  const out = [...head];
  for (const e of entries) out.push(e.timeout === undefined ? `add ${setName} ${e.cidr.text}` : `add ${setName} ${e.cidr.text} timeout ${e.timeout}`);
  out.push(...tail, '');
  return out.join('\n');
}
const cols = (list: readonly KernelEntry[]) => kernelColumns(list, list.length);

describe('TextBuilder rendering', () => {
  it('renders ipset scripts byte for byte as the joined lines would', () => {
    fc.assert(
      fc.property(fc.array(arbEntry, { maxLength: 40 }), arbName, arbName, fc.boolean(), fc.array(arbEntry, { maxLength: 3 }), (entries, set, temp, setExists, del) => {
        const sizing = { hashsize: 1024, maxelem: 65536 };
        const head = [renderIpsetCreate(temp, sizing), renderIpsetMarker(temp)];
        const tail = setExists ? [`swap ${temp} ${set}`, `destroy ${temp}`] : [`rename ${temp} ${set}`];
        expect(renderIpsetFull({ setName: set, tempName: temp, sizing, setExists }, cols(entries))).toBe(joined(head, temp, entries, tail));
        expect(renderIpsetDelta(set, cols(entries), cols(del))).toBe(entries.length + del.length === 0 ? '' : joined(del.map((d) => `del ${set} ${d.cidr.text}`), set, entries, []));
      }),
      { numRuns: 1000 },
    );
  });

  it('writes numbers and non-ASCII text as template literals do', () => {
    const t = new TextBuilder();
    const parts: string[] = [];
    for (const n of [0, 7, 10, 2_147_483, Number.MAX_SAFE_INTEGER, 1.5, -2, 1e21, NaN]) {
      t.num(n).str(' ');
      parts.push(`${n} `);
    }
    for (const s of ['é', 'ü-set', '日本', 'x'.repeat(100_000)]) {
      t.str(s);
      parts.push(s);
    }
    expect(t.toString()).toBe(parts.join(''));
  });
});

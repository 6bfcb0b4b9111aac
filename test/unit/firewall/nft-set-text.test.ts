import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { columnsToMap } from '../../../src/firewall/entries.js';
import { parseNftDuration, parseNftSetJson, parseNftSetText } from '../../../src/firewall/nft/parse.js';
import { fromNumber } from '../../../src/net/ipv4.js';

/**
 * The agent reads its sets back in nft's text form (half nft's memory of the JSON form at a
 * million elements). These check that the text parser gives what the JSON parser gives for
 * the same set, on nft's own printing and on generated sets.
 */

/** A duration as nft prints it: `1d2h3m4s500ms`, zero parts left out (`0s` for nothing). */
function nftDuration(ms: number): string {
  const parts: Array<[number, string]> = [
    [Math.floor(ms / 86_400_000), 'd'],
    [Math.floor(ms / 3_600_000) % 24, 'h'],
    [Math.floor(ms / 60_000) % 60, 'm'],
    [Math.floor(ms / 1000) % 60, 's'],
    [ms % 1000, 'ms'],
  ];
  const text = parts.filter(([n]) => n > 0).map(([n, u]) => `${n}${u}`).join('');
  return text === '' ? '0s' : text;
}

/** `nft list set` output for these elements, two per line as nft wraps them. */
function nftText(elements: string[]): string {
  const lines: string[] = [];
  for (let i = 0; i < elements.length; i += 2) lines.push(elements.slice(i, i + 2).join(', '));
  return `table inet wcf_agent {\n\tset wcf-blocklist {\n\t\ttype ipv4_addr\n\t\tflags timeout\n\t\tcomment "wcf-agent"\n\t\telements = { ${lines.join(',\n\t\t\t     ')} }\n\t}\n}\n`;
}

describe('nft set text', () => {
  it('reads nft 1.0.6’s own printing of an interval set with timeouts, prefixes and a range as the JSON form reads it', () => {
    // Printed by `nft list set` and `nft -j list set` of the same set (values as captured).
    const text =
      'table inet t2 {\n\tset n {\n\t\ttype ipv4_addr\n\t\tflags interval,timeout\n' +
      '\t\telements = { 10.0.0.0/8 timeout 2h expires 1h59m59s996ms, 192.0.2.0/24,\n' +
      '\t\t\t     198.51.100.1-198.51.100.5 timeout 1m30s expires 1m28s996ms }\n\t}\n}\n';
    const json = JSON.stringify({
      nftables: [
        { metainfo: { version: '1.0.6' } },
        {
          set: {
            family: 'inet', name: 'n', table: 't2', type: 'ipv4_addr', flags: ['interval', 'timeout'],
            elem: [
              { elem: { val: { prefix: { addr: '10.0.0.0', len: 8 } }, timeout: 7200, expires: 7199 } },
              { prefix: { addr: '192.0.2.0', len: 24 } },
              { elem: { val: { range: ['198.51.100.1', '198.51.100.5'] }, timeout: 90, expires: 88 } },
            ],
          },
        },
      ],
    });
    const fromText = parseNftSetText(text)!;
    const fromJson = parseNftSetJson(json);
    expect([...columnsToMap(fromText.entries)]).toEqual([...columnsToMap(fromJson.entries)]);
    expect(fromText.nonCidr).toBe(fromJson.nonCidr);
    expect([...columnsToMap(fromText.entries)]).toEqual([
      ['10.0.0.0/8', 7199],
      ['192.0.2.0/24', undefined],
      ['198.51.100.1', 88],
      ['198.51.100.2/31', 88],
      ['198.51.100.4/31', 88],
    ]);
    expect(fromText.nonCidr).toBe(1); // the range that is not one CIDR
  });

  it('an empty set, a set with no elements line, and a timeout without expires', () => {
    expect(parseNftSetText('table inet t {\n\tset s {\n\t\ttype ipv4_addr\n\t}\n}\n')!.entries.length).toBe(0);
    expect(parseNftSetText(nftText([]))!.entries.length).toBe(0);
    expect([...columnsToMap(parseNftSetText(nftText(['192.0.2.1 timeout 1d']))!.entries)]).toEqual([['192.0.2.1', 86_400]]);
    // An element in its last second reports expires 0s (or only ms): still there, as in the JSON form.
    expect([...columnsToMap(parseNftSetText(nftText(['192.0.2.1 timeout 1m expires 400ms']))!.entries)]).toEqual([['192.0.2.1', 1]]);
  });

  it('answers undefined when an element carries a quoted string (the caller reads JSON), and counts unknown words as not a CIDR', () => {
    expect(parseNftSetText(nftText(['192.0.2.1 comment "a, 198.51.100.9"']))).toBeUndefined();
    const odd = parseNftSetText(nftText(['192.0.2.1 counter packets 1 bytes 60', '192.0.2.2 timeout soon', 'nonsense', '192.0.2.3']))!;
    expect([...columnsToMap(odd.entries)]).toEqual([['192.0.2.3', undefined]]);
    expect(odd.nonCidr).toBe(3);
  });

  it('durations: every part, and what is not one', () => {
    expect(parseNftDuration('1d2h3m4s500ms')).toBe(((26 * 60 + 3) * 60 + 4) * 1000 + 500);
    expect(parseNftDuration('1m30s')).toBe(90_000);
    expect(parseNftDuration('30ms')).toBe(30);
    expect(parseNftDuration('3m')).toBe(180_000);
    for (const bad of ['', 'soon', '1x', '5s1d', '-1s']) expect(parseNftDuration(bad), bad).toBeUndefined();
  });

  it('property: any set printed as nft prints it reads back as the JSON form of the same set', () => {
    const element = fc.record({
      start: fc.nat({ max: 0xffffffff }),
      prefix: fc.integer({ min: 8, max: 32 }),
      timeoutMs: fc.option(fc.integer({ min: 1000, max: 30 * 86_400_000 }), { nil: undefined }),
      leftMs: fc.integer({ min: 0, max: 30 * 86_400_000 }),
    });
    fc.assert(
      fc.property(fc.array(element, { maxLength: 40 }), (raw) => {
        const seen = new Set<string>();
        const texts: string[] = [];
        const elem: unknown[] = [];
        for (const e of raw) {
          const c = fromNumber(e.start, e.prefix);
          const cidr = c.text;
          if (seen.has(cidr)) continue;
          seen.add(cidr);
          const val = e.prefix === 32 ? cidr : { prefix: { addr: fromNumber(c.start, 32).text, len: e.prefix } };
          if (e.timeoutMs === undefined) {
            texts.push(cidr);
            elem.push(val);
          } else {
            const left = Math.min(e.leftMs, e.timeoutMs);
            texts.push(`${cidr} timeout ${nftDuration(e.timeoutMs)} expires ${nftDuration(left)}`);
            elem.push({ elem: { val, timeout: Math.floor(e.timeoutMs / 1000), expires: Math.floor(left / 1000) } });
          }
        }
        const fromText = parseNftSetText(nftText(texts))!;
        const fromJson = parseNftSetJson(JSON.stringify({ nftables: [{ set: { elem } }] }));
        expect([...columnsToMap(fromText.entries)]).toEqual([...columnsToMap(fromJson.entries)]);
        expect(fromText.nonCidr).toBe(fromJson.nonCidr);
      }),
    );
  });
});

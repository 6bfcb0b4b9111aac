import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FirewallError } from '../../../src/errors.js';
import { CidrIndex, rangeToCidrs } from '../../../src/net/cidr-index.js';
import { MAX_KERNEL_TIMEOUT_S, columnsToMap, kernelColumns, kernelList, kernelTimeout, normalizeEntries, sortCidrTexts, type KernelEntry } from '../../../src/firewall/entries.js';
import type { EntryColumns } from '../../../src/firewall/entry-columns.js';
import { ipsetSizing, parseIpsetSave, renderIpsetDelta, renderIpsetFull } from '../../../src/firewall/ipset/text.js';
import { hasOverlap, resolveOverlaps } from '../../../src/firewall/nft/overlaps.js';
import { nftHooks, parseNftScriptElements, parseNftSetJson, renderNftDelta, renderNftRefill, type NftLayout } from '../../../src/firewall/nft/text.js';
import { renderNftTable } from '../../../src/firewall/nft/table/build.js';
import type { FirewallEntry } from '../../../src/firewall/entry.js';
import { fromNumber, parseCidr, toCidr } from '../../../src/net/ipv4.js';

const entry = (cidr: string, timeout?: number): KernelEntry => ({ cidr: toCidr(cidr)!, timeout });
/** Kernel entries as the renderers take them, and back. */
const cols = (list: readonly KernelEntry[]): EntryColumns => kernelColumns(list, list.length);
const objs = (c: EntryColumns): KernelEntry[] => kernelList(c);
const layout: NftLayout = { table: 'wcf_agent', set: 'wcf-blocklist', nets: 'wcf-blocklist-nets', drops: 'wcf-blocklist-drops', hooks: ['input', 'forward'], priority: -5, stage: 'filter' as const, inbound: 'all' as const, forwardedOut: true, action: 'DROP', logBlocked: false, direction: 'inbound' };

describe('kernelTimeout', () => {
  it('rounds up, never returns 0 (ipset: permanent), clamps to the kernel maximum', () => {
    expect(kernelTimeout(undefined)).toBeUndefined();
    expect(kernelTimeout(0)).toBe(1);
    expect(kernelTimeout(-5)).toBe(1);
    expect(kernelTimeout(0.2)).toBe(1);
    expect(kernelTimeout(1.5)).toBe(2);
    expect(kernelTimeout(300)).toBe(300);
    expect(kernelTimeout(MAX_KERNEL_TIMEOUT_S + 1)).toBe(2_147_483);
    expect(kernelTimeout(Infinity)).toBe(MAX_KERNEL_TIMEOUT_S);
    expect(() => kernelTimeout(NaN)).toThrow(FirewallError);
  });
});

describe('toCidr', () => {
  it('agrees with parseCidr on any input (fast path and fallback)', () => {
    const octet = fc.oneof(fc.integer({ min: 0, max: 300 }).map(String), fc.constantFrom('01', '007', '', 'a', '-1', '256'));
    const text = fc
      .tuple(octet, octet, octet, octet, fc.option(fc.oneof(fc.integer({ min: 0, max: 40 }).map(String), fc.constantFrom('08', '', 'x'))))
      .map(([a, b, c, d, p]) => `${a}.${b}.${c}.${d}${p === null ? '' : `/${p}`}`);
    fc.assert(
      fc.property(fc.oneof(text, fc.string()), (s) => {
        const r = parseCidr(s);
        expect(toCidr(s)).toEqual(r.ok ? r.cidr : undefined);
      }),
      { numRuns: 5000 },
    );
  });

  it('canonicalises', () => {
    expect(toCidr('10.1.2.3/24')?.text).toBe('10.1.2.0/24');
    expect(toCidr('192.0.2.7/32')?.text).toBe('192.0.2.7');
    expect(toCidr('0.0.0.0/0')).toMatchObject({ start: 0, end: 2 ** 32 - 1, prefix: 0 });
    expect(toCidr('255.255.255.255')).toMatchObject({ start: 2 ** 32 - 1, prefix: 32 });
  });
});

describe('normalizeEntries', () => {
  it('canonicalises and de-duplicates, keeping the longest timeout (permanent wins)', () => {
    const m = normalizeEntries([
      { cidr: toCidr('192.0.2.7')!, timeoutSeconds: 10 },
      { cidr: toCidr('192.0.2.7/32')!, timeoutSeconds: 50 },
      { cidr: toCidr('10.1.2.3/24')!, timeoutSeconds: 5 },
      { cidr: toCidr('10.1.2.0/24')! },
      { cidr: toCidr('10.1.2.0/24')!, timeoutSeconds: 99 },
    ]);
    expect(objs(m).map((e) => [e.cidr.text, e.timeout])).toEqual([
      ['192.0.2.7', 50],
      ['10.1.2.0/24', undefined],
    ]);
  });

  it('refuses anything that is not an IPv4 address or network before any script is rendered', () => {
    // An entry holds a parsed Cidr: text that does not parse never becomes one.
    for (const bad of ['1.2.3.4 }\nflush ruleset', 'example.com', '1.2.3.4/33', '::1', '', '1.2.3.4 timeout 5']) {
      expect(toCidr(bad)).toBeUndefined();
    }
    expect(() => normalizeEntries([{ cidr: toCidr('1.2.3.4')!, timeoutSeconds: NaN }])).toThrow(FirewallError);
    expect(() => normalizeEntries([{ cidr: toCidr('1.2.3.4')!, timeoutSeconds: NaN }])).toThrow(/timeout/);
  });
});

describe('CidrIndex', () => {
  it('maps distinct CIDRs to indexes, like a Map keyed by text', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.integer({ min: 0, max: 32 })), { maxLength: 300 }), (pairs) => {
        const index = new CidrIndex(pairs.length);
        const model = new Map<string, number>();
        pairs.forEach(([v, p], i) => {
          const c = fromNumber(v, p);
          const prev = index.add(c.start, c.prefix, i);
          expect(prev).toBe(model.get(c.text) ?? -1);
          if (!model.has(c.text)) model.set(c.text, i);
        });
        for (const [text, i] of model) expect(index.get(toCidr(text)!.start, toCidr(text)!.prefix)).toBe(i);
        expect(index.get(1, 7)).toBe(-1);
      }),
    );
  });
});

describe('rangeToCidrs', () => {
  it('covers exactly the range with aligned blocks', () => {
    expect(rangeToCidrs(toCidr('192.0.2.0')!.start, toCidr('192.0.2.255')!.start).map((c) => c.text)).toEqual(['192.0.2.0/24']);
    expect(rangeToCidrs(toCidr('198.51.100.7')!.start, toCidr('198.51.100.8')!.start).map((c) => c.text)).toEqual(['198.51.100.7', '198.51.100.8']);
    expect(rangeToCidrs(0, 2 ** 32 - 1).map((c) => c.text)).toEqual(['0.0.0.0/0']);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.integer({ min: 0, max: 100_000 }), (start, len) => {
        const end = Math.min(2 ** 32 - 1, start + len);
        const cidrs = rangeToCidrs(start, end);
        let cur = start;
        for (const c of cidrs) {
          expect(c.start).toBe(cur);
          expect(fromNumber(c.start, c.prefix).start).toBe(c.start); // aligned
          cur = c.end + 1;
        }
        expect(cur).toBe(end + 1);
        expect(cidrs.length).toBeLessThanOrEqual(64);
      }),
    );
  });
});

describe('resolveOverlaps', () => {
  const life = (t: number | undefined) => t ?? Infinity;

  it('leaves non-overlapping entries alone (adjacent ones are not merged)', () => {
    const input = [entry('192.0.2.128/25'), entry('192.0.2.0/25', 100), entry('198.51.100.7', 5)];
    const c = cols(input);
    expect(resolveOverlaps(c)).toBe(c); // not even copied
    expect(objs(resolveOverlaps(c))).toEqual(input);
  });

  it('drops an entry covered by a wider one that lives at least as long', () => {
    expect(objs(resolveOverlaps(cols([entry('192.0.2.0/24'), entry('192.0.2.7', 100)])))).toEqual([entry('192.0.2.0/24')]);
    expect(objs(resolveOverlaps(cols([entry('192.0.2.0/24', 100), entry('192.0.2.7', 100)])))).toEqual([entry('192.0.2.0/24', 100)]);
  });

  it('splits a wider entry around a narrower one that outlives it', () => {
    const out = objs(resolveOverlaps(cols([entry('192.0.2.0/24', 100), entry('192.0.2.7')])));
    expect(out.map((e) => `${e.cidr.text}${e.timeout === undefined ? '' : ` ${e.timeout}`}`)).toEqual([
      '192.0.2.0/30 100',
      '192.0.2.4/31 100',
      '192.0.2.6 100',
      '192.0.2.7',
      '192.0.2.8/29 100',
      '192.0.2.16/28 100',
      '192.0.2.32/27 100',
      '192.0.2.64/26 100',
      '192.0.2.128/25 100',
    ]);
  });

  it('keeps, for every address, the longest lifetime of the entries covering it, with no overlaps left', () => {
    // Entries inside 10.0.0.0/20 so random CIDRs nest often.
    const arbEntry = fc
      .tuple(fc.integer({ min: 0, max: 4095 }), fc.integer({ min: 20, max: 32 }), fc.option(fc.integer({ min: 1, max: 5 })))
      .map(([off, prefix, t]) => ({ cidr: fromNumber(((10 << 24) >>> 0) + off, prefix), timeout: t ?? undefined }));
    fc.assert(
      fc.property(fc.array(arbEntry, { maxLength: 25 }), (raw) => {
        const m = new Map<string, KernelEntry>();
        for (const e of raw) m.set(e.cidr.text, e);
        const input = [...m.values()];
        const out = objs(resolveOverlaps(cols(input)));
        expect(hasOverlap(cols(input))).toBe(input.some((a) => input.some((b) => a !== b && a.cidr.start <= b.cidr.start && b.cidr.end <= a.cidr.end)));
        out.sort((a, b) => a.cidr.start - b.cidr.start);
        for (let i = 1; i < out.length; i++) expect(out[i]!.cidr.start).toBeGreaterThan(out[i - 1]!.cidr.end);
        const base = (10 << 24) >>> 0;
        for (let a = base; a < base + 4096 + 64; a += 1) {
          const want = input.filter((e) => e.cidr.start <= a && a <= e.cidr.end).reduce((acc, e) => Math.max(acc, life(e.timeout)), -1);
          const got = out.filter((e) => e.cidr.start <= a && a <= e.cidr.end).map((e) => life(e.timeout));
          expect(got.length <= 1).toBe(true);
          expect(got[0] ?? -1).toBe(want);
        }
      }),
      { numRuns: 60 },
    );
  });
});

describe('ipset rendering', () => {
  it('sizes the set from the capacity, with a slot for the ownership marker', () => {
    expect(ipsetSizing(10_000, 5)).toEqual({ hashsize: 4096, maxelem: 65536 });
    expect(ipsetSizing(1_000_000, 10)).toEqual({ hashsize: 262144, maxelem: 1_000_001 });
    expect(ipsetSizing(10, 200_000)).toEqual({ hashsize: 65536, maxelem: 200_001 });
    expect(ipsetSizing(1, 0)).toEqual({ hashsize: 1024, maxelem: 65536 });
  });

  it('renders a full replacement as build-temp-then-swap', () => {
    const entries = [entry('192.0.2.0/24'), entry('198.51.100.7', 300)];
    const sizing = { hashsize: 1024, maxelem: 65536 };
    expect(renderIpsetFull({ setName: 's', tempName: 's-tmp', sizing, setExists: true }, cols(entries))).toBe(
      'create s-tmp hash:net family inet hashsize 1024 maxelem 65536 timeout 0 comment\n' +
        'add s-tmp 255.255.255.255 nomatch comment "wcf-agent"\n' +
        'add s-tmp 192.0.2.0/24\n' +
        'add s-tmp 198.51.100.7 timeout 300\n' +
        'swap s-tmp s\n' +
        'destroy s-tmp\n',
    );
    expect(renderIpsetFull({ setName: 's', tempName: 's-tmp', sizing, setExists: false }, cols([]))).toBe(
      'create s-tmp hash:net family inet hashsize 1024 maxelem 65536 timeout 0 comment\nadd s-tmp 255.255.255.255 nomatch comment "wcf-agent"\nrename s-tmp s\n',
    );
  });

  it('renders a delta as dels then adds', () => {
    expect(renderIpsetDelta('s', cols([entry('192.0.2.1', 9), entry('192.0.2.2')]), cols([entry('10.0.0.0/8')]))).toBe(
      'del s 10.0.0.0/8\nadd s 192.0.2.1 timeout 9\nadd s 192.0.2.2\n',
    );
  });

  it('parses ipset save output, timeout 0 meaning permanent, and flags foreign entry options', () => {
    const p = parseIpsetSave(
      'create s hash:net family inet hashsize 1024 maxelem 65536 timeout 0 bucketsize 12 initval 0x1\n' +
        'add s 192.0.2.0/24 timeout 0\nadd s 198.51.100.7 timeout 42\nadd s 10.0.0.0/8 nomatch\nadd other 1.2.3.4\n',
      's',
    );
    expect(p.exists).toBe(true);
    expect(p.type).toBe('hash:net');
    expect(p.createOptions.get('maxelem')).toBe('65536');
    expect(p.createOptions.has('timeout')).toBe(true);
    expect([...columnsToMap(p.entries)]).toEqual([
      ['192.0.2.0/24', undefined],
      ['198.51.100.7', 42],
      ['10.0.0.0/8', undefined],
    ]);
    expect(p.odd).toBe(1);
    expect(parseIpsetSave('', 's').exists).toBe(false);
  });
});

describe('nft rendering', () => {
  it('maps hook chains to nft hooks', () => {
    expect(nftHooks(['INPUT', 'FORWARD'])).toEqual(['input', 'forward']);
    expect(nftHooks(['DOCKER-USER', 'INPUT'])).toEqual(['input', 'forward']);
    expect(nftHooks(['OUTPUT'])).toEqual(['output']);
  });

  it('renders the whole table as one block (what the dry run writes)', () => {
    const text = renderNftTable({ ...layout, logBlocked: true, action: 'REJECT' }, cols([entry('192.0.2.0/24'), entry('198.51.100.7', 300)])) + '\n';
    expect(text).toBe(
      [
        'table inet wcf_agent {',
        '\tcomment "wcf-agent"',
        '\tset wcf-blocklist {',
        '\t\ttype ipv4_addr',
        '\t\tflags timeout',
        '\t\tcomment "wcf-agent"',
        '\t\telements = {',
        '\t\t\t198.51.100.7 timeout 300s',
        '\t\t}',
        '\t}',
        '\tset wcf-blocklist-nets {',
        '\t\ttypeof ip saddr . meta nfproto',
        '\t\tflags interval,timeout',
        '\t\tcomment "wcf-agent"',
        '\t\telements = {',
        '\t\t\t192.0.2.0/24 . ipv4',
        '\t\t}',
        '\t}',
        '\tset wcf-blocklist-drops {',
        '\t\ttypeof meta nfproto',
        '\t\tsize 4',
        '\t\tflags dynamic',
        '\t\tcounter',
        '\t\tcomment "wcf-agent"',
        '\t}',
        '\tset wcf-blocklist-in {',
        '\t\ttype ipv4_addr',
        '\t\tsize 65536',
        '\t\tflags dynamic,timeout',
        '\t\ttimeout 604800s',
        '\t\tcounter',
        '\t\tcomment "wcf-agent"',
        '\t}',
        '\tchain refuse {',
        '\t\tmeta l4proto tcp reject with tcp reset',
        '\t\treject with icmpx admin-prohibited',
        '\t}',
        '\tchain input {',
        '\t\ttype filter hook input priority -5; policy accept;',
        '\t\tip saddr @wcf-blocklist iif != "lo" limit rate 10/minute log prefix "wcf-agent: "',
        '\t\tip saddr @wcf-blocklist iif != "lo" update @wcf-blocklist-in { ip saddr } update @wcf-blocklist-drops { meta nfproto } counter jump refuse',
        '\t\tip saddr @wcf-blocklist iif != "lo" update @wcf-blocklist-drops { meta nfproto } counter jump refuse',
        '\t\tip saddr . meta nfproto @wcf-blocklist-nets iif != "lo" limit rate 10/minute log prefix "wcf-agent: "',
        '\t\tip saddr . meta nfproto @wcf-blocklist-nets iif != "lo" update @wcf-blocklist-in { ip saddr } update @wcf-blocklist-drops { meta nfproto } counter jump refuse',
        '\t\tip saddr . meta nfproto @wcf-blocklist-nets iif != "lo" update @wcf-blocklist-drops { meta nfproto } counter jump refuse',
        '\t}',
        '\tchain forward {',
        '\t\ttype filter hook forward priority -5; policy accept;',
        '\t\tip saddr @wcf-blocklist iif != "lo" limit rate 10/minute log prefix "wcf-agent: "',
        '\t\tip saddr @wcf-blocklist iif != "lo" update @wcf-blocklist-in { ip saddr } update @wcf-blocklist-drops { meta nfproto } counter jump refuse',
        '\t\tip saddr @wcf-blocklist iif != "lo" update @wcf-blocklist-drops { meta nfproto } counter jump refuse',
        '\t\tip saddr . meta nfproto @wcf-blocklist-nets iif != "lo" limit rate 10/minute log prefix "wcf-agent: "',
        '\t\tip saddr . meta nfproto @wcf-blocklist-nets iif != "lo" update @wcf-blocklist-in { ip saddr } update @wcf-blocklist-drops { meta nfproto } counter jump refuse',
        '\t\tip saddr . meta nfproto @wcf-blocklist-nets iif != "lo" update @wcf-blocklist-drops { meta nfproto } counter jump refuse',
        '\t}',
        '}',
        '',
      ].join('\n'),
    );
    expect(renderNftTable(layout, cols([]))).not.toContain('elements');
    expect(parseNftScriptElements(text)).toEqual(
      new Map([
        ['192.0.2.0/24', undefined],
        ['198.51.100.7', 300],
      ]),
    );
  });

  // Added as a table block, never `add element`: nft 1.0.x reads every interval set on the host back before an `add element`.
  const block = (set: string, flags: string, elements: string) =>
    `table inet wcf_agent {\n\tcomment "wcf-agent"\n\tset ${set} {\n\t\t${set.endsWith('-nets') ? 'typeof ip saddr . meta nfproto' : 'type ipv4_addr'}\n\t\tflags ${flags}\n\t\tcomment "wcf-agent"\n\t\telements = {\n${elements}\n\t\t}\n\t}\n}\n`;

  it('renders a refill as flush set + the elements added as a table block', () => {
    expect(renderNftRefill(layout, cols([entry('192.0.2.1'), entry('192.0.2.2', 5)]))).toBe(
      'flush set inet wcf_agent wcf-blocklist\n' + block('wcf-blocklist', 'timeout', '\t\t\t192.0.2.1,\n\t\t\t192.0.2.2 timeout 5s'),
    );
    // The networks' set is keyed on the address and the family (see NftParts).
    expect(renderNftRefill(layout, cols([entry('10.0.0.0/8', 5)]), 'wcf-blocklist-nets')).toBe(
      'flush set inet wcf_agent wcf-blocklist-nets\n' + block('wcf-blocklist-nets', 'interval,timeout', '\t\t\t10.0.0.0/8 . ipv4 timeout 5s'),
    );
    expect(renderNftDelta(layout, cols([]), cols([entry('10.0.0.0/8')]), 'wcf-blocklist-nets')).toBe(
      block('wcf-blocklist-nets', 'interval,timeout', '\t\t\t10.0.0.0/8 . ipv4') + 'delete element inet wcf_agent wcf-blocklist-nets {\n\t10.0.0.0/8 . ipv4\n}\n',
    );
    expect(renderNftRefill(layout, cols([]))).toBe('flush set inet wcf_agent wcf-blocklist\n');
  });

  it('renders a delta whose deletes cannot fail on elements that just expired', () => {
    expect(renderNftDelta(layout, cols([entry('192.0.2.9', 60)]), cols([entry('192.0.2.1', 30), entry('192.0.2.2')]))).toBe(
      block('wcf-blocklist', 'timeout', '\t\t\t192.0.2.1,\n\t\t\t192.0.2.2') +
        'delete element inet wcf_agent wcf-blocklist {\n\t192.0.2.1,\n\t192.0.2.2\n}\n' +
        block('wcf-blocklist', 'timeout', '\t\t\t192.0.2.9 timeout 60s'),
    );
    expect(renderNftDelta(layout, cols([]), cols([]))).toBe('');
  });

  it('parses every element shape of `nft -j list set`', () => {
    const json = JSON.stringify({
      nftables: [
        { metainfo: { version: '1.0.6' } },
        {
          set: {
            family: 'inet',
            name: 'wcf-blocklist',
            elem: [
              '198.51.100.1',
              { prefix: { addr: '192.0.2.0', len: 24 } },
              { elem: { val: '198.51.100.2', timeout: 60, expires: 42 } },
              { elem: { val: { prefix: { addr: '10.0.0.0', len: 8 } }, timeout: 100, expires: 0 } },
              { range: ['203.0.113.0', '203.0.113.255'] },
              { elem: { val: { range: ['198.51.100.7', '198.51.100.8'] }, timeout: 50, expires: 49 } },
              { elem: { val: '198.51.100.9' } },
              { weird: true },
            ],
          },
        },
      ],
    });
    const p = parseNftSetJson(json);
    expect([...columnsToMap(p.entries)]).toEqual([
      ['198.51.100.1', undefined],
      ['192.0.2.0/24', undefined],
      ['198.51.100.2', 42],
      ['10.0.0.0/8', 1],
      ['203.0.113.0/24', undefined],
      ['198.51.100.7', 49],
      ['198.51.100.8', 49],
      ['198.51.100.9', undefined],
    ]);
    expect(p.nonCidr).toBe(2); // the two-CIDR range and the unknown element
    expect(() => parseNftSetJson('not json')).toThrow(FirewallError);
  });

  it('sorts CIDRs by address, wider first', () => {
    expect(sortCidrTexts(['192.0.2.7', '10.0.0.0/8', '192.0.2.0/24', '9.255.255.255'])).toEqual(['9.255.255.255', '10.0.0.0/8', '192.0.2.0/24', '192.0.2.7']);
  });
});

describe('rendering speed', () => {
  /** Milliseconds to normalise and render `n` entries as ipset restore text and as an nft script. */
  function renderMs(n: number): { ms: number; ipsetLines: number; nftChars: number } {
    const entries: FirewallEntry[] = [];
    for (let i = 0; i < n; i++) entries.push({ cidr: fromNumber(0x0a000000 + i * 3, 32), timeoutSeconds: i % 3 ? 3600 : undefined });
    const t0 = performance.now();
    const normalized = normalizeEntries(entries);
    const ipset = renderIpsetFull({ setName: 's', tempName: 's-tmp', sizing: ipsetSizing(n, normalized.length), setExists: true }, normalized);
    const nft = renderNftTable(layout, resolveOverlaps(normalized));
    return { ms: performance.now() - t0, ipsetLines: ipset.split('\n').length, nftChars: nft.length };
  }

  it('renders 1,000,000 entries in linear time (ipset restore text and nft script)', () => {
    renderMs(20_000); // warm-up: the first call pays for compiling the code
    const small = renderMs(100_000);
    const large = renderMs(1_000_000);
    expect(large.ipsetLines).toBe(1_000_005); // create, the ownership marker, the entries, swap, destroy
    expect(large.nftChars).toBeGreaterThan(15_000_000);
    // Ten times the entries: linear costs about ten times as long, quadratic a hundred. A ratio,
    // not a time, so a slow or busy machine does not fail it; the margin absorbs GC noise.
    expect(large.ms / Math.max(small.ms, 1)).toBeLessThan(40);
  });
});

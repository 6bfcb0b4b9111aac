// What `explain` adds to the selection: selectEntries on N random indicators, plain (as every
// cycle runs it) and with `explainFor` one address; median of N runs each. Not a test.
//   npx tsx scripts/bench/standalone/explain.ts [--indicators 1000000] [--runs 7]
import { parseArgs } from 'node:util';
import { IndicatorMap } from '../../../src/feed/indicator.js';
import { fromNumber } from '../../../src/net/ipv4.js';
import { ProtectedSet } from '../../../src/policy/protect.js';
import { selectEntries, type SelectionInput } from '../../../src/policy/select.js';
import { createScoring } from '../../../src/score/decay.js';

const { values } = parseArgs({ options: { indicators: { type: 'string', default: '1000000' }, runs: { type: 'string', default: '7' } } });
const n = Number(values.indicators);
const now = 1_800_000_000;
let seed = 12345;
const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
const feed = new IndicatorMap(n);
for (let i = 0; i < n; i++) {
  const prefix = rand() < 0.85 ? 32 : 16 + Math.floor(rand() * 16);
  const c = fromNumber(Math.floor(rand() * 2 ** 32), prefix);
  feed.setParts(c.start, c.prefix, now - Math.floor(rand() * 10 * 86400), 1 + rand() * 9);
}
const input: SelectionInput = {
  now,
  feed,
  manualBlocks: [],
  whitelist: [],
  protectedSet: ProtectedSet.of([]),
  minPrefix: 8,
  threshold: 3,
  maximumRules: 100_000,
  scoring: createScoring({}),
};
const probe = feed.indicatorAt(Math.floor(n / 2)).cidr;

function median(run: () => void): number {
  const times: number[] = [];
  for (let i = 0; i < Number(values.runs); i++) {
    const t0 = process.hrtime.bigint();
    run();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  return Math.round(times[Math.floor(times.length / 2)]!);
}

selectEntries(input); // warm-up
const plainMs = median(() => selectEntries(input));
const explainMs = median(() => selectEntries({ ...input, explainFor: probe }));
const explained = selectEntries({ ...input, explainFor: probe }).explained!.length;
console.log(JSON.stringify({ indicators: feed.size, plainMedianMs: plainMs, explainMedianMs: explainMs, explained }));

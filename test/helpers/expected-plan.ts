import { networkInterfaces } from 'node:os';

/**
 * An independent computation of the contract's selection (section 2), written
 * without the agent's modules, to check `plan --json` against.
 */
export interface SimIndicator {
  ip: string;
  ts: number;
  score: number;
  decision: -1 | 0 | 1;
}

function toRange(ip: string): [number, number, number] {
  const [addr, p] = ip.split('/');
  const prefix = p === undefined ? 32 : Number(p);
  const n = addr!.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
  const size = 2 ** (32 - prefix);
  const start = Math.floor(n / size) * size;
  return [start, start + size - 1, prefix];
}
const canon = (ip: string) => {
  const [s, , prefix] = toRange(ip);
  const a = [s >>> 24, (s >>> 16) & 255, (s >>> 8) & 255, s & 255].join('.');
  return prefix === 32 ? a : `${a}/${prefix}`;
};
const overlap = (a: string, b: string) => {
  const [as, ae] = toRange(a);
  const [bs, be] = toRange(b);
  return as <= be && bs <= ae;
};

export function decay(S: number, t: number): number {
  if (S <= 0) return 0;
  return S / (1 + Math.exp((3 / S) * (Math.max(0, t) / 3600 - 2.5 * S)));
}

export function expectedPlan(
  items: Iterable<SimIndicator>,
  o: { now: number; threshold: number; maximumRules: number; minPrefix: number; allowlist?: string[] },
): { ip: string; reason: 'manual' | 'score'; score: number | null }[] {
  const hostAddrs = Object.values(networkInterfaces()).flatMap((l) => (l ?? []).filter((a) => a.family === 'IPv4').map((a) => a.address));
  const never = ['127.0.0.0/8', '0.0.0.0/8', ...(o.allowlist ?? []), ...hostAddrs];
  const all = [...items];
  const white = all.filter((i) => i.decision === 0).map((i) => i.ip);
  const ok = (ip: string) => toRange(ip)[2] >= o.minPrefix && !never.some((n) => overlap(n, ip)) && !white.some((w) => overlap(w, ip));
  const manual = all
    .filter((i) => i.decision === 1 && ok(i.ip))
    .map((i) => ({ ip: canon(i.ip), reason: 'manual' as const, score: decay(i.score, o.now - i.ts) }))
    .sort((a, b) => toRange(a.ip)[0] - toRange(b.ip)[0] || toRange(a.ip)[2] - toRange(b.ip)[2]);
  const scored = all
    .filter((i) => i.decision !== 1 && ok(i.ip))
    .map((i) => ({ ip: canon(i.ip), reason: 'score' as const, score: decay(i.score, o.now - i.ts) }))
    .filter((e) => e.score >= o.threshold)
    .sort((a, b) => b.score - a.score || toRange(a.ip)[0] - toRange(b.ip)[0] || toRange(a.ip)[2] - toRange(b.ip)[2]);
  return [...manual, ...scored].slice(0, o.maximumRules);
}

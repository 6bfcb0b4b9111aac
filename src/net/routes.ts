import { isIPv4 } from 'node:net';

/**
 * The gateways of `ip -j -4 route show default` (JSON: `[{dst: "default",
 * gateway: "192.0.2.1", dev, ...}, ...]`), in order, without duplicates.
 * Routes without a gateway (a default route straight onto a device) and
 * multipath `nexthops` entries are read; anything else is ignored. Throws
 * when the text is not JSON (the caller logs it): a half-read route table is
 * better reported than silently empty.
 */
export function parseDefaultGateways(json: string): string[] {
  const parsed: unknown = JSON.parse(json === '' ? '[]' : json);
  if (!Array.isArray(parsed)) throw new Error('ip route: expected a JSON array');
  const out: string[] = [];
  const add = (g: unknown) => {
    if (typeof g === 'string' && isIPv4(g) && !out.includes(g)) out.push(g);
  };
  for (const r of parsed) {
    if (typeof r !== 'object' || r === null) continue;
    const route = r as { gateway?: unknown; nexthops?: unknown };
    add(route.gateway);
    if (Array.isArray(route.nexthops)) for (const h of route.nexthops) add((h as { gateway?: unknown } | null)?.gateway);
  }
  return out;
}

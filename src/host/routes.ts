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

const RTF_UP = 0x1;
const RTF_GATEWAY = 0x2;

/**
 * The gateways of the default routes in `/proc/net/route` text (the kernel's
 * table for the reader's own network namespace; read without running a
 * command). Addresses are printed as the host-order hex of the network-order
 * value: little endian on x86_64 and aarch64 (`littleEndian`). Lines that do
 * not parse are ignored.
 */
export function parseProcNetRoute(text: string, littleEndian = true): string[] {
  const out: string[] = [];
  for (const line of text.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 8) continue;
    const [, dst, gw, flagsHex, , , , mask] = f;
    if (dst !== '00000000' || mask !== '00000000' || !/^[0-9A-Fa-f]{8}$/.test(gw!) || !/^[0-9A-Fa-f]{1,8}$/.test(flagsHex!)) continue;
    const flags = parseInt(flagsHex!, 16);
    if ((flags & RTF_UP) === 0 || (flags & RTF_GATEWAY) === 0) continue;
    const bytes = [0, 2, 4, 6].map((i) => parseInt(gw!.slice(i, i + 2), 16));
    const ip = (littleEndian ? bytes.reverse() : bytes).join('.');
    if (isIPv4(ip) && ip !== '0.0.0.0' && !out.includes(ip)) out.push(ip);
  }
  return out;
}

import { isIPv6 } from 'node:net';
import { OWNED_MARKER } from './owned-file.js';
import type { DnsAnswer } from './types.js';

/** Answers' TTL: short, so a name the agent stops blocking is reachable again soon. */
export const BLOCK_TTL = 60;

/** unbound's zone type for an answer: `always_nxdomain`, or `redirect` (subdomains get the apex data). */
export function unboundZoneType(answer: DnsAnswer): string {
  return answer.action === 'nxdomain' ? 'always_nxdomain' : 'redirect';
}

export function sinkholeRecord(name: string, address: string): string {
  return `${name}. ${BLOCK_TTL} IN ${isIPv6(address) ? 'AAAA' : 'A'} ${address}`;
}

/** The include file for unbound.conf: the same zones as the runtime, so a restart keeps them. */
export function renderUnboundInclude(names: readonly string[], answer: DnsAnswer): string {
  const type = unboundZoneType(answer);
  const lines = [`# ${OWNED_MARKER}: names blocked from the URL feed; rewritten every cycle, do not edit`, 'server:'];
  for (const n of names) {
    lines.push(`  local-zone: "${n}." ${type}`);
    if (answer.action === 'sinkhole') lines.push(`  local-data: "${sinkholeRecord(n, answer.address)}"`);
  }
  return lines.join('\n') + '\n';
}

/** Names of an include file the agent wrote (its own format only). */
export function parseUnboundInclude(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^\s*local-zone:\s*"([^"]+?)\.?"\s+\S+\s*$/gm)) out.push(m[1]!);
  return out;
}

/**
 * An RPZ zone (relative names, the zone's origin is its configured name): per blocked name
 * `name CNAME .` and `*.name CNAME .` (NXDOMAIN), or A/AAAA records to the sinkhole.
 */
export function renderRpzZone(names: readonly string[], answer: DnsAnswer, serial: number): string {
  const lines = [
    `; ${OWNED_MARKER}: response policy zone of names blocked from the URL feed; rewritten every cycle, do not edit`,
    `$TTL ${BLOCK_TTL}`,
    `@ IN SOA localhost. hostmaster.localhost. ${serial} 3600 600 86400 ${BLOCK_TTL}`,
    '@ IN NS localhost.',
  ];
  const rdata = answer.action === 'nxdomain' ? 'CNAME .' : `${isIPv6(answer.address) ? 'AAAA' : 'A'} ${answer.address}`;
  for (const n of names) lines.push(`${n} ${rdata}`, `*.${n} ${rdata}`);
  return lines.join('\n') + '\n';
}

export function parseRpzSerial(text: string): number | undefined {
  const m = /^@\s+IN\s+SOA\s+\S+\s+\S+\s+(\d+)\s/m.exec(text);
  return m ? Number(m[1]) : undefined;
}

export function parseRpzNames(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^([a-z0-9_][a-z0-9_.-]*)\s+(?:CNAME|A|AAAA)\s/gm)) out.push(m[1]!);
  return out;
}

/** The next SOA serial: larger than the previous one, the clock when it is ahead (RFC 1982 within 32 bits). */
export function nextSerial(previous: number | undefined, now: number): number {
  const next = Math.max((previous ?? 0) + 1, now);
  return next > 0xffffffff ? 1 : next;
}

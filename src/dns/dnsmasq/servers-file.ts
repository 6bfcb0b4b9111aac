import { OWNED_MARKER } from '../owned-file.js';

/**
 * The agent's dnsmasq servers-file: one `server=/name/` line per blocked name. A server line
 * with no address makes the name and every name below it local: dnsmasq answers them from its
 * own hosts and DHCP data only, i.e. NXDOMAIN for a blocked name. A servers-file takes only
 * server= lines, and dnsmasq re-reads it (and clears its cache) on SIGHUP.
 */
export function renderServersFile(names: readonly string[]): string {
  const lines = [`# ${OWNED_MARKER}: names blocked from the URL feed (dnsmasq servers-file); rewritten when they change, do not edit`];
  for (const n of names) lines.push(`server=/${n}/`);
  return lines.join('\n') + '\n';
}

/** Names of a servers-file the agent wrote (its own format only). */
export function parseServersFile(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^server=\/([^/\s]+)\/$/gm)) out.push(m[1]!);
  return out;
}

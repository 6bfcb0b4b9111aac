import { renderRpzZone, renderUnboundInclude } from './render.js';
import { renderServersFile } from './dnsmasq/servers-file.js';
import type { DnsAnswer, DnsPluginName } from './types.js';

/**
 * The first line the backend writes into its file for `name` (what `explain` shows): the
 * renderers' own output for that one name, so it cannot drift from what is written.
 */
export function blockLine(plugin: DnsPluginName, name: string, answer: DnsAnswer): string {
  const lines = (text: string) => text.trimEnd().split('\n');
  switch (plugin) {
    case 'unbound':
      return lines(renderUnboundInclude([name], answer))[2]!.trim();
    case 'dnsmasq':
      return lines(renderServersFile([name]))[1]!;
    case 'rpz':
    case 'dry-run':
      return lines(renderRpzZone([name], answer, 1))[4]!;
  }
}

import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const PAGE = join(import.meta.dirname, '../../../../docs/url-feed.md');

/**
 * A configuration snippet of docs/url-feed.md: the fenced block right after the line
 * `<!-- tested: ID -->`. The resolver tests build their resolvers' configuration from these
 * blocks, so the snippets a reader copies are the ones the suite ran; a block that is gone or
 * renamed fails the test that needs it.
 */
export function docSnippet(id: string): string {
  const page = readFileSync(PAGE, 'utf8');
  const m = new RegExp(`^<!-- tested: ${id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} -->\\n\`\`\`[\\w-]*\\n([\\s\\S]*?)^\`\`\`$`, 'm').exec(page);
  if (!m) throw new Error(`docs/url-feed.md has no snippet marked <!-- tested: ${id} --> followed by a fenced block`);
  return m[1]!;
}

/** The paths the snippets use (what install.sh creates); a lab puts its own in their place. */
export const DOC_PATHS = {
  rpzFile: '/var/lib/wcf-agent-rpz/rpz.wcf.zone',
  dnsmasqFile: '/var/lib/wcf-agent-dnsmasq/servers.conf',
} as const;

/** A snippet with the documented paths replaced; fails when a path the test must replace is not in it. */
export function snippetWith(id: string, replace: Record<string, string>): string {
  let text = docSnippet(id);
  for (const [from, to] of Object.entries(replace)) {
    if (!text.includes(from)) throw new Error(`the snippet ${id} of docs/url-feed.md no longer names ${from}`);
    text = text.replaceAll(from, to);
  }
  return text;
}

/** The agent's config.json keys of a snippet written as a JSON object. */
export function agentKeys(id: string): Record<string, unknown> {
  return JSON.parse(docSnippet(id)) as Record<string, unknown>;
}

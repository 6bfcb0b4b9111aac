import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AUTHORITY } from './authority.js';
import { agentKeys, DOC_PATHS, snippetWith } from './doc-snippets.js';
import type { ResolverSpec } from './real-resolver.js';

/**
 * Knot Resolver 5 (`kresd`): the `policy.rpz` line of docs/url-feed.md, before the lab's
 * forwarding rule; kresd watches the zone file itself, so the documented agent keys have no
 * rpz_reload.
 */
export const knot: ResolverSpec = {
  daemon: 'kresd',
  settleMs: 5_000,
  setup({ dir, file }) {
    writeFileSync(
      join(dir, 'kresd.conf'),
      [
        "net.listen('127.0.0.1', 53, { kind = 'dns' })",
        // The lab's root zone is not signed.
        "trust_anchors.remove('.')",
        `cache.open(10 * MB, 'lmdb://${dir}/cache')`,
        snippetWith('knot-policy', { [DOC_PATHS.rpzFile]: file }),
        `policy.add(policy.all(policy.FORWARD('${AUTHORITY.address}@${AUTHORITY.port}')))`,
      ].join('\n'),
    );
    const agent = agentKeys('knot-agent');
    if ('rpz_reload' in agent) throw new Error('the documented Knot Resolver setup has no rpz_reload: kresd watches the file');
    return {
      argv: ['kresd', '-n', '-c', join(dir, 'kresd.conf'), dir],
      agent: { ...agent, rpz_file: file },
      // Knot needs no reload command; one that fails stands for any an operator adds (a check
      // that kresd is up): kresd has already read the new file by then, and must read the previous one again.
      failingReload: ['false'],
    };
  },
};

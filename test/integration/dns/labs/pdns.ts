import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AUTHORITY } from './authority.js';
import { agentKeys, DOC_PATHS, snippetWith } from './doc-snippets.js';
import { withLabOptions, type ResolverSpec } from './real-resolver.js';

/**
 * PowerDNS Recursor: the `rpzFile` line and the recursor.conf lines of docs/url-feed.md,
 * forwarding everything to the lab's authority; reloaded with the documented
 * `rec_control reload-lua-config` (over the lab's control socket).
 */
export const pdns: ResolverSpec = {
  daemon: 'pdns_recursor',
  // packetcache-ttl in the documented recursor.conf lines (10 s), and a margin.
  settleMs: 15_000,
  setup({ dir, file }) {
    writeFileSync(join(dir, 'recursor.lua'), snippetWith('pdns-lua', { [DOC_PATHS.rpzFile]: file }));
    writeFileSync(
      join(dir, 'recursor.conf'),
      [
        'local-address=127.0.0.1',
        'local-port=53',
        `socket-dir=${dir}`,
        `forward-zones-recurse=.=${AUTHORITY.address}:${AUTHORITY.port}`,
        // The lab's root zone is not signed.
        'dnssec=off',
        'daemon=no',
        'write-pid=no',
        // As Debian's recursor.conf: no security-status query (it would go to the lab's authority).
        'security-poll-suffix=',
        `lua-config-file=${dir}/recursor.lua`,
        snippetWith('pdns-conf', {}),
      ].join('\n'),
    );
    const agent = agentKeys('pdns-agent');
    return {
      argv: ['pdns_recursor', `--config-dir=${dir}`, '--setuid=root', '--setgid=root'],
      agent: { ...agent, rpz_file: file, rpz_reload: withLabOptions(agent.rpz_reload, [`--socket-dir=${dir}`]) },
      // No recursor listens there: rec_control fails, the running one keeps its zone.
      failingReload: ['rec_control', `--socket-dir=${dir}/no-recursor-here`, 'reload-lua-config'],
    };
  },
};

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AUTHORITY } from './authority.js';
import { agentKeys, DOC_PATHS, snippetWith } from './doc-snippets.js';
import { withLabOptions, type ResolverSpec } from './real-resolver.js';

// rndc's key for the lab only (base64 of 32 bytes): named and rndc share it through the two files.
const KEY = 'key "wcf-lab" { algorithm hmac-sha256; secret "d2NmLWFnZW50LWxhYi1vbmx5LW5vdC1hLXNlY3JldCE="; };';

/**
 * BIND 9 (`named`): the response-policy statement and the zone of docs/url-feed.md inside a
 * recursive named that forwards everything to the lab's authority; reloaded with the
 * documented `rndc reload rpz.wcf` (over the lab's control channel, in the namespace).
 */
export const bind: ResolverSpec = {
  daemon: 'named',
  settleMs: 5_000,
  setup({ ns, dir, file }) {
    const rndcConf = join(dir, 'rndc.conf');
    writeFileSync(rndcConf, `${KEY}\noptions { default-key "wcf-lab"; default-server 127.0.0.1; default-port 953; };\n`);
    writeFileSync(
      join(dir, 'named.conf'),
      [
        'options {',
        `  directory "${dir}";`,
        `  pid-file "${dir}/named.pid";`,
        '  listen-on port 53 { 127.0.0.1; };',
        '  listen-on-v6 { none; };',
        '  recursion yes;',
        '  allow-query { 127.0.0.0/8; };',
        '  forward only;',
        `  forwarders { ${AUTHORITY.address} port ${AUTHORITY.port}; };`,
        // The lab's root zone is not signed.
        '  dnssec-validation no;',
        snippetWith('bind-options', {}),
        '};',
        KEY,
        'controls { inet 127.0.0.1 port 953 allow { 127.0.0.1; } keys { "wcf-lab"; }; };',
        snippetWith('bind-zone', { [DOC_PATHS.rpzFile]: file }),
      ].join('\n'),
    );
    const inNs = ['ip', 'netns', 'exec', ns.name];
    const agent = agentKeys('bind-agent');
    return {
      argv: ['named', '-g', '-u', 'root', '-c', join(dir, 'named.conf')],
      agent: { ...agent, rpz_file: file, rpz_reload: withLabOptions(agent.rpz_reload, ['-c', rndcConf], inNs) },
      // A zone named never loaded: rndc fails, named keeps serving what it has.
      failingReload: [...inNs, 'rndc', '-c', rndcConf, 'reload', 'no-such-zone'],
    };
  },
};

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { waitFor } from '../../../helpers/cli.js';
import type { Netns } from '../../../netns/netns.js';

/** Where the authority answers inside the namespace; the resolvers forward everything there. */
export const AUTHORITY = { address: '127.0.0.1', port: 5300 } as const;

/**
 * The authoritative server behind a resolver under test: an unbound serving a root zone of
 * its own (every test name, TTL 60) on 127.0.0.1:5300 of the namespace and nothing else, so
 * the resolver's answers come from a real upstream and no query leaves the namespace.
 */
export async function startAuthority(ns: Netns, dir: string, records: Record<string, string>, zoneLines: readonly string[] = []): Promise<void> {
  const zone = [
    '$TTL 60',
    '. IN SOA ns.lab. hostmaster.lab. 1 3600 600 86400 60',
    '. IN NS ns.lab.',
    'ns.lab. IN A 127.0.0.1',
    ...Object.entries(records).map(([n, a]) => `${n}. IN A ${a}`),
    ...zoneLines,
  ];
  writeFileSync(join(dir, 'authority.zone'), zone.join('\n') + '\n');
  const conf = join(dir, 'authority.conf');
  writeFileSync(
    conf,
    [
      'server:',
      `  interface: ${AUTHORITY.address}@${AUTHORITY.port}`,
      '  do-daemonize: no',
      '  username: ""',
      '  chroot: ""',
      `  directory: "${dir}"`,
      `  pidfile: "${dir}/authority.pid"`,
      '  use-syslog: no',
      '  logfile: ""',
      '  do-ip6: no',
      '  access-control: 127.0.0.0/8 allow',
      // "test." and the private reverse zones are among unbound's built-in empty zones: let the zone answer for them.
      '  local-zone: "test." nodefault',
      '  local-zone: "10.in-addr.arpa." nodefault',
      '  local-zone: "168.192.in-addr.arpa." nodefault',
      'auth-zone:',
      '  name: "."',
      `  zonefile: "${dir}/authority.zone"`,
      '  for-downstream: yes',
      '  for-upstream: no',
      'remote-control:',
      '  control-enable: no',
    ].join('\n') + '\n',
  );
  // Stopped with the namespace (Netns.destroy kills what it spawned).
  ns.spawn('unbound', ['-c', conf]);
  const [first] = Object.keys(records);
  await waitFor(async () => {
    const r = await execa('ip', ['netns', 'exec', ns.name, 'dig', '+short', '+time=1', '+tries=1', '-p', String(AUTHORITY.port), `@${AUTHORITY.address}`, first!, 'A'], { reject: false });
    return r.stdout.trim() === records[first!];
  }, 'the authoritative unbound to answer', 15_000);
}

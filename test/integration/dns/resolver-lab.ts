import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { waitFor } from '../../helpers/cli.js';
import { Netns } from '../../netns/netns.js';
import { digAnswers, digStatus } from './labs/dig.js';

/**
 * A real unbound for the resolver tests, inside a network namespace the test creates:
 * it listens on the namespace's 127.0.0.1:53 only, answers the test names from a root
 * auth-zone of its own (so answers go through the iterator, where RPZ applies, and no
 * query ever leaves the namespace), and is controlled over a unix socket in a temp dir.
 * The host's resolver and configuration are never touched.
 */
export interface ResolverLab {
  readonly ns: Netns;
  readonly dir: string;
  readonly conf: string;
  /** The unbound-control argument array for the agent's config. */
  readonly control: string[];
  /** Where the agent's include file goes (unbound.conf includes `wcf-agent*.conf` from dir). */
  readonly includeFile: string;
  readonly rpzFile: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** The DNS status of an A query: NOERROR, NXDOMAIN, ... */
  status(name: string): Promise<string>;
  /** The A records answered. */
  answers(name: string): Promise<string[]>;
  /** `unbound-control list_local_zones` lines. */
  localZones(): Promise<string[]>;
  ctl(...args: string[]): Promise<string>;
  destroy(): Promise<void>;
}

export interface ResolverLabOptions {
  /** name -> IPv4 address served by the lab's zone. */
  records: Record<string, string>;
  /** Add unbound's `rpz:` clause for zone `rpz.wcf` read from rpzFile. */
  rpz?: boolean;
  /** Extra `server:` lines (e.g. an operator's own local-zone). */
  serverLines?: string[];
  /** Extra lines of the lab's root zone (records other than A: PTR, ...). */
  zoneLines?: string[];
}

export async function createResolverLab(o: ResolverLabOptions): Promise<ResolverLab> {
  const ns = await Netns.create();
  const dir = mkdtempSync(join(tmpdir(), 'wcf-dns-'));
  const conf = join(dir, 'unbound.conf');
  const includeFile = join(dir, 'wcf-agent.conf');
  const rpzFile = join(dir, 'rpz.wcf.zone');
  const zone = [
    '$TTL 60',
    '. IN SOA ns.lab. hostmaster.lab. 1 3600 600 86400 60',
    '. IN NS ns.lab.',
    'ns.lab. IN A 127.0.0.1',
    ...Object.entries(o.records).map(([n, a]) => `${n}. IN A ${a}`),
    ...(o.zoneLines ?? []),
  ];
  writeFileSync(join(dir, 'root.zone'), zone.join('\n') + '\n');
  if (o.rpz) writeFileSync(rpzFile, '');
  writeFileSync(
    conf,
    [
      'server:',
      '  interface: 127.0.0.1',
      '  port: 53',
      '  do-daemonize: no',
      '  username: ""',
      '  chroot: ""',
      `  directory: "${dir}"`,
      `  pidfile: "${dir}/unbound.pid"`,
      '  use-syslog: no',
      '  logfile: ""',
      '  verbosity: 1',
      '  do-ip6: no',
      '  access-control: 127.0.0.0/8 allow',
      `  module-config: "${o.rpz ? 'respip ' : ''}iterator"`,
      // "test." is one of unbound's built-in empty zones: let the lab's zone answer for it.
      '  local-zone: "test." nodefault',
      ...(o.serverLines ?? []).map((l) => `  ${l}`),
      // As Debian's unbound.conf does with unbound.conf.d/*.conf: a glob, so the file may not exist yet.
      `  include: "${dir}/wcf-agent*.conf"`,
      'auth-zone:',
      '  name: "."',
      `  zonefile: "${dir}/root.zone"`,
      '  for-downstream: no',
      '  for-upstream: yes',
      '  fallback-enabled: no',
      ...(o.rpz ? ['rpz:', '  name: rpz.wcf', `  zonefile: "${rpzFile}"`] : []),
      'remote-control:',
      '  control-enable: yes',
      `  control-interface: "${dir}/control.sock"`,
      '  control-use-cert: no',
    ].join('\n') + '\n',
  );
  const control = ['unbound-control', '-c', conf];
  let child: ResultPromise | undefined;
  const ctl = async (...args: string[]) => (await execa(control[0]!, [...control.slice(1), ...args])).stdout;
  const lab: ResolverLab = {
    ns,
    dir,
    conf,
    control,
    includeFile,
    rpzFile,
    ctl,
    async start() {
      child = ns.spawn('unbound', ['-c', conf]);
      await waitFor(async () => (await execa(control[0]!, [...control.slice(1), 'status'], { reject: false })).exitCode === 0, 'unbound to answer its control socket', 15_000);
    },
    async stop() {
      if (!child) return;
      child.kill('SIGTERM');
      await child;
      child = undefined;
    },
    status: (name) => digStatus(ns, name),
    answers: (name) => digAnswers(ns, name),
    async localZones() {
      return (await ctl('list_local_zones')).split('\n').filter(Boolean).sort();
    },
    async destroy() {
      await lab.stop();
      await ns.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await lab.start();
  return lab;
}

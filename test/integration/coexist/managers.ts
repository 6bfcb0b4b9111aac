import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { waitFor } from '../../helpers/cli.js';
import type { Netns } from '../../netns/netns.js';

/**
 * Debian's firewalld and ufw, run for real inside a test's network namespace, never on
 * the machine's own: every command of theirs runs in the namespace and in a mount
 * namespace of its own, where a temp copy of their configuration is mounted over
 * /etc/firewalld (or /etc/ufw, /lib/ufw, /etc/default/ufw) and a tmpfs over /run (their
 * lock and temp files). What they write stays in the copy; the machine's /etc is only
 * read, once, to make it. firewalld talks D-Bus: it gets a dbus-daemon of its own, on a
 * socket in the temp dir, and firewall-cmd is pointed at it.
 */

/** `sh -c` script run in the fresh mount namespace: mounts `$1` pairs (SOURCE TARGET), a tmpfs on /run, then runs the rest. */
const ISOLATED = `
set -e
mount -t tmpfs -o mode=0755 tmpfs /run
while [ "$1" != -- ]; do mount --bind "$1" "$2"; shift 2; done
shift
exec "$@"
`;

function isolatedArgv(ns: Netns, binds: readonly [string, string][], argv: readonly string[]): string[] {
  return ['ip', 'netns', 'exec', ns.name, 'unshare', '--mount', '--propagation', 'private', 'sh', '-c', ISOLATED, 'isolated', ...binds.flat(), '--', ...argv];
}

async function requireTool(file: string, pkg: string): Promise<void> {
  const r = await execa('sh', ['-c', 'command -v "$1"', 'sh', file], { reject: false });
  // Fail loudly: scripts/test.sh installs these; a run without them must not look green.
  if (r.exitCode !== 0) throw new Error(`${file} is not installed (apt-get install ${pkg}; scripts/test.sh does it as root)`);
}

/** The ruleset text of one table, without counters (which move with traffic). */
export async function stateless(ns: Netns, family: string, table: string): Promise<string> {
  return ns.exec('nft', ['-s', 'list', 'table', family, table]);
}

const BUS_CONFIG = (socket: string) => `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=${socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="root"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`;

export class Firewalld {
  private constructor(
    private readonly ns: Netns,
    private readonly dir: string,
    private readonly env: Record<string, string>,
    private readonly bus: ResultPromise,
    private readonly daemon: ResultPromise,
    private readonly output: { text: string },
  ) {}

  /** firewalld 1.x with its nftables backend (Debian's default, as on RHEL 9) in `ns`, answering firewall-cmd. */
  static async start(ns: Netns): Promise<Firewalld> {
    for (const [file, pkg] of [['firewalld', 'firewalld'], ['firewall-cmd', 'firewalld'], ['dbus-daemon', 'dbus']] as const) await requireTool(file, pkg);
    const dir = mkdtempSync(join(tmpdir(), 'wcf-firewalld-'));
    cpSync('/etc/firewalld', join(dir, 'etc'), { recursive: true });
    const conf = join(dir, 'etc', 'firewalld.conf');
    // The backend under test, whatever the machine's file says.
    writeFileSync(conf, readFileSync(conf, 'utf8').replace(/^FirewallBackend=.*$/m, 'FirewallBackend=nftables'));
    const socket = join(dir, 'bus');
    writeFileSync(join(dir, 'bus.conf'), BUS_CONFIG(socket));
    const bus = execa('dbus-daemon', ['--config-file', join(dir, 'bus.conf'), '--nofork', '--nopidfile', '--print-address'], { reject: false, stdin: 'ignore' });
    const env = { DBUS_SYSTEM_BUS_ADDRESS: `unix:path=${socket}`, LC_ALL: 'C' };
    const output = { text: '' };
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('dbus-daemon did not start within 10 s')), 10_000);
        bus.stdout!.on('data', () => {
          clearTimeout(timer);
          resolve();
        });
        void bus.then((r) => reject(new Error(`dbus-daemon exited: ${String(r.stderr)}`)));
      });
      const argv = isolatedArgv(ns, [[join(dir, 'etc'), '/etc/firewalld']], ['firewalld', '--nofork', '--nopid', '--log-target', 'console']);
      const daemon = execa(argv[0]!, argv.slice(1), { reject: false, stdin: 'ignore', env, extendEnv: true, all: true, buffer: false });
      daemon.all!.on('data', (d: Buffer) => (output.text += d.toString('utf8')));
      const fw = new Firewalld(ns, dir, env, bus, daemon, output);
      await waitFor(async () => (await fw.cmd(['--state'], false)).trim() === 'running', `firewalld to answer (its output: ${output.text})`, 60_000, 250);
      return fw;
    } catch (err) {
      bus.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  /** `firewall-cmd ARGS` on this firewalld's bus; throws on failure unless `check` is false. */
  async cmd(args: readonly string[], check = true): Promise<string> {
    const r = await execa('firewall-cmd', args, { reject: false, env: this.env, extendEnv: true, timeout: 60_000 });
    if (check && r.exitCode !== 0) throw new Error(`firewall-cmd ${args.join(' ')} failed (${r.exitCode}): ${r.stderr || r.stdout}\nfirewalld said: ${this.output.text.slice(-2000)}`);
    return r.stdout;
  }

  /** firewalld's own table, as nft lists it without counters. */
  table(): Promise<string> {
    return stateless(this.ns, 'inet', 'firewalld');
  }

  /** The permanent configuration firewalld wrote (its copy of /etc/firewalld). */
  configFile(name: string): string {
    return readFileSync(join(this.dir, 'etc', name), 'utf8');
  }

  async stop(): Promise<void> {
    this.daemon.kill('SIGTERM');
    await Promise.race([this.daemon, new Promise((r) => setTimeout(r, 15_000))]);
    this.daemon.kill('SIGKILL');
    await this.daemon;
    this.bus.kill('SIGTERM');
    await this.bus;
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export interface UfwOptions {
  /** ufw's MANAGE_BUILTINS (default "no", as shipped): "yes" flushes every chain of the filter table on start and stop. */
  readonly manageBuiltins?: boolean;
}

export class Ufw {
  private constructor(
    private readonly ns: Netns,
    private readonly dir: string,
  ) {}

  static async create(ns: Netns, opts: UfwOptions = {}): Promise<Ufw> {
    await requireTool('ufw', 'ufw');
    const dir = mkdtempSync(join(tmpdir(), 'wcf-ufw-'));
    cpSync('/etc/ufw', join(dir, 'etc'), { recursive: true });
    cpSync('/lib/ufw', join(dir, 'lib'), { recursive: true });
    // No sysctl file: ufw's would be applied by `sysctl -p`, not what is under test.
    const defaults = readFileSync('/etc/default/ufw', 'utf8')
      .replace(/^IPT_SYSCTL=.*$/m, 'IPT_SYSCTL=/dev/null')
      .replace(/^MANAGE_BUILTINS=.*$/m, `MANAGE_BUILTINS=${opts.manageBuiltins ? 'yes' : 'no'}`);
    writeFileSync(join(dir, 'default'), defaults);
    // What every ufw starts from: disabled, no rule of the user's.
    writeFileSync(join(dir, 'etc', 'ufw.conf'), readFileSync(join(dir, 'etc', 'ufw.conf'), 'utf8').replace(/^ENABLED=.*$/m, 'ENABLED=no'));
    return new Ufw(ns, dir);
  }

  /** `ufw ARGS` in the namespace, on this copy of its configuration; throws on failure. */
  async run(args: readonly string[]): Promise<string> {
    const argv = isolatedArgv(
      this.ns,
      [
        [join(this.dir, 'etc'), '/etc/ufw'],
        [join(this.dir, 'lib'), '/lib/ufw'],
        [join(this.dir, 'default'), '/etc/default/ufw'],
      ],
      ['ufw', ...args],
    );
    const r = await execa(argv[0]!, argv.slice(1), { reject: false, env: { LC_ALL: 'C' }, extendEnv: true, timeout: 60_000 });
    if (r.exitCode !== 0) throw new Error(`ufw ${args.join(' ')} failed (${r.exitCode}): ${r.stderr || r.stdout}`);
    return r.stdout;
  }

  /** ufw's objects in the kernel: its chains, rules and the built-in chains' policies (iptables-save of the filter table, the agent's lines left out). */
  async rules(agentChain: string): Promise<string> {
    const save = await this.ns.exec('iptables-save', ['-t', 'filter']);
    return save
      .split('\n')
      .filter((l) => !l.startsWith('#') && !l.includes(agentChain))
      .map((l) => l.replace(/\[\d+:\d+\]$/, ''))
      .join('\n');
  }

  /** ufw's ufw.conf as ufw wrote it in its copy. */
  config(): string {
    return readFileSync(join(this.dir, 'etc', 'ufw.conf'), 'utf8');
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

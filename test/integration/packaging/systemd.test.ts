/**
 * systemd/wcf-agent.service: `systemd-analyze verify` accepts it without a single
 * warning, and the directives the agent relies on are there.
 *
 * verify checks that ExecStart= names an existing executable, so it runs on a copy
 * whose ExecStart binary is /bin/true (arguments and every other line unchanged).
 */
import { execSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, run, tempDir } from '../../helpers/packaging.js';

const UNIT = join(ROOT, 'systemd/wcf-agent.service');
const text = readFileSync(UNIT, 'utf8');
let dir: string;

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
  const r = await run('systemd-analyze', ['verify', path], { cwd: dir });
  const complaints = (r.stdout + '\n' + r.stderr).split('\n').filter((l) => l.includes('wcf-agent.service'));
  return { ...r, complaints };
}

/** Every value of `key=` in the unit (directives may repeat). */
function values(key: string): string[] {
  return [...text.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].map((m) => m[1]!.trim());
}

describe('systemd unit', () => {
  it('passes systemd-analyze verify with no warning at all', async () => {
    const r = await verify(verifiableCopy());
    expect(r.complaints, r.stderr).toEqual([]);
    expect(r.exitCode, r.stderr).toBe(0);
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
    if (!m) {
      // --offline is systemd >= 250; nothing to measure on older ones.
      expect(r.stderr).toMatch(/offline|unrecognized|unknown/i);
      return;
    }
    expect(Number(m[1])).toBeLessThanOrEqual(2.5);
  });
});

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderServersFile } from '../../../src/dns/dnsmasq/servers-file.js';
import { ROOT, VERSION } from '../../helpers/packaging.js';
import { ensureImage, Podman, uniqueName } from './podman.js';

/**
 * deploy/ansible's role applied to a container built from the same Debian release and
 * apt sources as the agent's image (deploy/image/rootfs.sh, variant apt, plus python3
 * for Ansible, python3-apt for its apt module, systemd for systemctl), through the
 * podman connection plugin of Debian's ansible (collection containers.podman). The
 * .deb is built from the binary in the image. systemd does not run in the container:
 * the unit is enabled, not started (the role starts it only where systemd is PID 1).
 */

const ROOTFS_PACKAGES = 'python3,python3-apt,systemd,nftables,iptables,ipset';
const TOKEN = 'vaulted-token-value';
/** A proxy password in wcf_agent_config: config.json holds it, so --diff and -v must not print that file. */
const PROXY_PASSWORD = 's3cret-proxy-pass';

interface Recap {
  ok: number;
  changed: number;
  failed: number;
}

describe('the Ansible role', () => {
  let podman: Podman;
  let dir: string;
  const target = uniqueName('ansible-target');
  const targetImage = `localhost/${uniqueName('ansible-rootfs')}:latest`;

  const exec = (args: string[]) => podman.run(['exec', target, ...args]);
  const playbook = async (extra: string[] = []): Promise<{ recap: Recap; out: string; code: number }> => {
    const r = await execa('ansible-playbook', ['-i', join(dir, 'inventory'), join(dir, 'play.yml'), '--vault-password-file', join(dir, 'vault-pass'), ...extra], {
      reject: false,
      cwd: dir,
      timeout: 300_000,
      env: {
        ...podman.env,
        ANSIBLE_ROLES_PATH: join(ROOT, 'deploy', 'ansible', 'roles'),
        ANSIBLE_LOCAL_TEMP: join(dir, 'ansible-tmp'),
        ANSIBLE_NOCOLOR: '1',
        ANSIBLE_RETRY_FILES_ENABLED: '0',
        ANSIBLE_STDOUT_CALLBACK: 'default',
      },
    });
    const out = `${r.stdout}\n${r.stderr}`;
    const m = new RegExp(`${target}\\s*:\\s*ok=(\\d+)\\s+changed=(\\d+)\\s+unreachable=\\d+\\s+failed=(\\d+)`).exec(out);
    if (!m) throw new Error(`no play recap for ${target}:\n${out}`);
    return { recap: { ok: Number(m[1]), changed: Number(m[2]), failed: Number(m[3]) }, out, code: r.exitCode ?? -1 };
  };
  /** The play with the role's variables: the first run's, with `vars` over them. */
  const writePlay = (vars: Record<string, unknown> = {}) =>
    writeFileSync(
      join(dir, 'play.yml'),
      `- hosts: all\n  gather_facts: true\n  gather_subset: [min]\n  vars_files: [vault.yml]\n  vars: ${JSON.stringify({
        wcf_agent_deb: join(dir, `wcf-agent_${VERSION}_amd64.deb`),
        wcf_agent_agid: 'fleet-1',
        wcf_agent_base_url: 'https://intel.internal.test/api/v1',
        wcf_agent_config: { plugin: 'nftables', allowlist: ['192.0.2.10'] },
        ...vars,
      })}\n  roles: [wcf_agent]\n`,
    );

  beforeAll(async () => {
    podman = Podman.create();
    dir = mkdtempSync(join(tmpdir(), 'wcf-ansible-'));
    // The .deb from the image's own binary and its SBOM, taken from the archive's layer.
    const archive = await ensureImage();
    const layer = (JSON.parse((await execa('tar', ['-xOf', archive, './manifest.json'])).stdout) as { Layers: string[] }[])[0]!.Layers[0]!;
    await execa('bash', ['-c', 'tar -xOf "$1" "$2" | tar -xzf - -C "$3" ./usr/bin/wcf-agent ./usr/share/doc/wcf-agent/sbom.cdx.json', 'extract', archive, `./${layer}`, dir]);
    const deb = await execa('bash', [join(ROOT, 'scripts', 'build-deb.sh'), '--binary', join(dir, 'usr', 'bin', 'wcf-agent'), '--out', dir], {
      cwd: ROOT,
      reject: false,
      timeout: 300_000,
      env: { DEB_COMPRESSION: 'gzip' },
    });
    if (deb.exitCode !== 0) throw new Error(`build-deb failed: ${deb.stderr}`);

    const rootfs = await execa('bash', [join(ROOT, 'deploy', 'image', 'rootfs.sh'), '--variant', 'apt', '--include', ROOTFS_PACKAGES], { cwd: ROOT, reject: false, timeout: 900_000 });
    if (rootfs.exitCode !== 0) throw new Error(`rootfs.sh failed: ${rootfs.stderr}`);
    await podman.ok(['import', '--change', 'CMD ["sleep", "infinity"]', rootfs.stdout.trim(), targetImage], { timeoutMs: 300_000 });
    // No network: nothing in the role needs one (the package's dependencies are in the rootfs).
    await podman.ok(['run', '-d', '--name', target, '--network', 'none', targetImage]);

    writeFileSync(join(dir, 'inventory'), `${target} ansible_connection=containers.podman.podman ansible_python_interpreter=/usr/bin/python3\n`);
    writeFileSync(join(dir, 'vault-pass'), 'test-vault-password\n', { mode: 0o600 });
    const vaulted = await execa('ansible-vault', ['encrypt_string', '--vault-password-file', join(dir, 'vault-pass'), '--name', 'wcf_agent_token', TOKEN], { cwd: dir });
    writeFileSync(join(dir, 'vault.yml'), `${vaulted.stdout}\n`);
    writePlay();
  }, 900_000);

  afterAll(async () => {
    await podman?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it('first run installs the .deb, writes config.json 0600 from the variables, enables the unit', async () => {
    const { recap, out, code } = await playbook();
    expect(code, out).toBe(0);
    expect(recap.failed).toBe(0);
    expect(recap.changed).toBeGreaterThan(0);
    expect(out).not.toContain(TOKEN);

    expect((await exec(['dpkg-query', '-W', '-f', '${Status} ${Version}', 'wcf-agent'])).stdout).toBe(`install ok installed ${VERSION}`);
    expect((await exec(['stat', '-c', '%a %U', '/etc/wcf-agent/config.json', '/etc/wcf-agent/token'])).stdout).toBe('600 root\n600 root');
    const config = JSON.parse((await exec(['cat', '/etc/wcf-agent/config.json'])).stdout) as Record<string, unknown>;
    expect(config).toEqual({ agid: 'fleet-1', base_url: 'https://intel.internal.test/api/v1', token_file: '/etc/wcf-agent/token', plugin: 'nftables', allowlist: ['192.0.2.10'] });
    expect((await exec(['cat', '/etc/wcf-agent/token'])).stdout).toBe(TOKEN);
    expect((await exec(['systemctl', 'is-enabled', 'wcf-agent'])).stdout).toBe('enabled');
    const check = await exec(['wcf-agent', 'check-config']);
    expect(check.exitCode, check.stderr).toBe(0);
  }, 300_000);

  it('second run changes nothing', async () => {
    const { recap, out } = await playbook();
    expect(recap, out).toEqual({ ok: recap.ok, changed: 0, failed: 0 });
  }, 300_000);

  it('check mode reports a change without making it', async () => {
    writePlay({ wcf_agent_agid: 'fleet-2' });
    const { recap, out } = await playbook(['--check']);
    expect(recap, out).toMatchObject({ changed: 1, failed: 0 });
    expect(JSON.parse((await exec(['cat', '/etc/wcf-agent/config.json'])).stdout).agid).toBe('fleet-1');
  }, 300_000);

  it('--diff and -v never print config.json: a proxy password in wcf_agent_config stays out of the output', async () => {
    const proxy = `http://agent:${PROXY_PASSWORD}@proxy.internal.test:3128`;
    writePlay({
      wcf_agent_deb: join(dir, `wcf-agent_${VERSION}_amd64.deb`),
      wcf_agent_agid: 'fleet-1',
      wcf_agent_base_url: 'https://intel.internal.test/api/v1',
      wcf_agent_config: { plugin: 'nftables', allowlist: ['192.0.2.10'], proxy },
    });
    const check = await playbook(['--check', '--diff', '-v']);
    expect(check.recap, check.out).toMatchObject({ changed: 1, failed: 0 });
    expect(check.out).not.toContain(PROXY_PASSWORD);
    const real = await playbook(['--diff', '-v']);
    expect(real.recap, real.out).toMatchObject({ failed: 0 });
    expect(real.out).not.toContain(PROXY_PASSWORD);
    // Written all the same.
    expect(JSON.parse((await exec(['cat', '/etc/wcf-agent/config.json'])).stdout).proxy).toBe(proxy);
  }, 300_000);

  it('a config the agent refuses is not written: the one in place stays', async () => {
    writePlay({
      wcf_agent_deb: join(dir, `wcf-agent_${VERSION}_amd64.deb`),
      wcf_agent_agid: 'fleet-2',
      wcf_agent_base_url: 'https://intel.internal.test/api/v1',
      wcf_agent_config: { plugin: 'nftables', min_prefix: 99 },
    });
    const { recap, code, out } = await playbook(['--diff']);
    expect(code).not.toBe(0);
    expect(recap.failed).toBe(1);
    // check-config's own line, naming the field, though the task writing the file logs nothing.
    expect(out).toMatch(/config\.json refused by wcf-agent check-config; the one in place is kept: .*min_prefix/);
    const config = JSON.parse((await exec(['cat', '/etc/wcf-agent/config.json'])).stdout) as Record<string, unknown>;
    expect(config.agid).toBe('fleet-1');
    expect(config.min_prefix).toBeUndefined();
  }, 300_000);

  it('wcf_agent_dns: dnsmasq makes what install.sh --dns dnsmasq makes and puts the dnsmasq keys in config.json; a second run changes nothing', async () => {
    writePlay({ wcf_agent_dns: 'dnsmasq' });
    const first = await playbook();
    expect(first.code, first.out).toBe(0);
    expect((await exec(['stat', '-c', '%a', '/var/lib/wcf-agent-dnsmasq', '/var/lib/wcf-agent-dnsmasq/servers.conf'])).stdout).toBe('755\n644');
    expect((await exec(['cat', '/var/lib/wcf-agent-dnsmasq/servers.conf'])).stdout + '\n').toBe(renderServersFile([]));
    expect((await exec(['cat', '/etc/dnsmasq.d/wcf-agent.conf'])).stdout).toContain('\nservers-file=/var/lib/wcf-agent-dnsmasq/servers.conf');
    const config = JSON.parse((await exec(['cat', '/etc/wcf-agent/config.json'])).stdout) as Record<string, unknown>;
    expect(config).toMatchObject({ url_feed: true, dns_plugin: 'dnsmasq', dnsmasq_file: '/var/lib/wcf-agent-dnsmasq/servers.conf', dnsmasq_reload: ['systemctl', 'kill', '-s', 'HUP', 'dnsmasq'], plugin: 'nftables' });
    const check = await exec(['wcf-agent', 'check-config']);
    expect(check.exitCode, check.stderr).toBe(0);
    const second = await playbook();
    expect(second.recap, second.out).toEqual({ ok: second.recap.ok, changed: 0, failed: 0 });
  }, 300_000);
});

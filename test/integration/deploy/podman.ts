import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { ROOT, VERSION } from '../../helpers/packaging.js';

/**
 * Podman for the deployment tests, on a configuration and an image store of the test's
 * own: a temp dir with a containers.conf and a storage.conf, named to every podman
 * call (and to podman-compose and Ansible, which call podman) through CONTAINERS_CONF
 * and CONTAINERS_STORAGE_CONF. The machine's /etc/containers and its image store are
 * never read or written; `destroy()` removes every container, pod, volume and image
 * and the temp dir.
 *
 * Why these settings: crun refuses this kernel's hybrid cgroup layout, so runc; the
 * default ulimits cannot be raised in the test sandbox, so none are set; cgroupfs
 * because no systemd manages the test's cgroups; events to a file because there may
 * be no journal.
 */

export const IMAGE = `localhost/wcf-agent:${VERSION}`;
export const ARCHIVE = join(ROOT, 'dist', `wcf-agent-${VERSION}-image.tar`);

export interface PodmanResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

let counter = 0;
/** A name no other test (or other run of this one) uses. */
export function uniqueName(what: string): string {
  return `wcft-${what}-${process.pid}-${++counter}`;
}

export class Podman {
  private constructor(
    readonly dir: string,
    readonly env: Record<string, string>,
  ) {}

  static create(): Podman {
    const dir = mkdtempSync(join(tmpdir(), 'wcf-podman-'));
    const conf = join(dir, 'containers.conf');
    const storage = join(dir, 'storage.conf');
    writeFileSync(
      conf,
      [
        '[containers]',
        'default_ulimits = []',
        // No network unless a test names one: a container on podman's default bridge would
        // have netavark write NAT and forward rules into the machine's own ruleset.
        'netns = "none"',
        'log_driver = "k8s-file"',
        '[engine]',
        'runtime = "runc"',
        'cgroup_manager = "cgroupfs"',
        'events_logger = "file"',
        `events_logfile_path = "${join(dir, 'events.log')}"`,
        `tmp_dir = "${join(dir, 'tmp')}"`,
        `volume_path = "${join(dir, 'volumes')}"`,
        '[network]',
        `network_config_dir = "${join(dir, 'networks')}"`,
        '',
      ].join('\n'),
    );
    writeFileSync(storage, ['[storage]', 'driver = "overlay"', `graphroot = "${join(dir, 'storage')}"`, `runroot = "${join(dir, 'run')}"`, ''].join('\n'));
    return new Podman(dir, { CONTAINERS_CONF: conf, CONTAINERS_STORAGE_CONF: storage });
  }

  /**
   * `podman ARGS`, optionally in a network namespace: there a container with host
   * networking (`--network host`, a pod's `hostNetwork: true`) gets that namespace, never
   * the machine's. nsenter rather than `ip netns exec`, which mounts a fresh /sys and so
   * hides the cgroup file systems podman needs.
   */
  async run(args: readonly string[], opts: { netns?: string; input?: string; timeoutMs?: number; file?: string } = {}): Promise<PodmanResult> {
    const tool = opts.file ?? 'podman';
    const argv = opts.netns ? ['nsenter', `--net=/run/netns/${opts.netns}`, tool, ...args] : [tool, ...args];
    const r = await execa(argv[0]!, argv.slice(1), {
      reject: false,
      env: { ...this.env, LC_ALL: 'C' },
      extendEnv: true,
      input: opts.input ?? '',
      timeout: opts.timeoutMs ?? 120_000,
    });
    return { exitCode: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr) };
  }

  /** Like run (`file`: another tool on the same configuration, e.g. podman-compose), but throws with podman's stderr when it fails. */
  async ok(args: readonly string[], opts: { netns?: string; input?: string; timeoutMs?: number; file?: string } = {}): Promise<string> {
    const r = await this.run(args, opts);
    if (r.exitCode !== 0) throw new Error(`${opts.file ?? 'podman'} ${args.join(' ')} failed (${r.exitCode}): ${r.stderr || r.stdout}`);
    return r.stdout;
  }

  async loadImage(): Promise<void> {
    const archive = await ensureImage();
    const out = await this.ok(['load', '-i', archive], { timeoutMs: 300_000 });
    if (!out.includes(IMAGE)) throw new Error(`podman load did not name the image ${IMAGE}:\n${out}`);
  }

  async destroy(): Promise<void> {
    await this.run(['pod', 'rm', '-af', '-t', '0']);
    await this.run(['rm', '-af', '-t', '0']);
    await this.run(['volume', 'rm', '-af']);
    await this.run(['rmi', '-af']);
    await this.run(['system', 'reset', '-f']);
    await execa('umount', ['-R', join(this.dir, 'storage', 'overlay')], { reject: false });
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * The image archive, built by `npm run build:image` when it is missing or older than
 * any of its inputs. Under a lock, so test files running in parallel build it once.
 */
export async function ensureImage(): Promise<string> {
  const inputs = [
    'src',
    'scripts/build-binary.sh',
    'scripts/bundle.mjs',
    'scripts/sbom.mjs',
    'packaging/node-runtime.sha256',
    'scripts/node-arm64.sh',
    'deploy/image',
    'package.json',
    'package-lock.json',
    'packaging/node-arm64/package-lock.json',
    'systemd/wcf-agent.service',
  ];
  const script = `
    set -e
    if [ ! -s "$1" ] || [ -n "$(find ${inputs.map((i) => `'${i}'`).join(' ')} -newer "$1" -print -quit)" ]; then
      bash deploy/image/build.sh --out "$1"
    fi`;
  mkdirSync(join(ROOT, 'dist'), { recursive: true });
  await execa('flock', [join(ROOT, 'dist', '.image.lock'), 'bash', '-c', script, 'build', ARCHIVE], {
    cwd: ROOT,
    timeout: 600_000,
    stdio: ['ignore', 'ignore', 'pipe'],
  }).catch((err: { stderr?: string; message: string }) => {
    throw new Error(`building the image failed: ${err.stderr ?? err.message}`);
  });
  if (!existsSync(ARCHIVE)) throw new Error(`${ARCHIVE} was not built`);
  return ARCHIVE;
}

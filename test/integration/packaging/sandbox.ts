/**
 * Commands run as an administrator runs them on this machine, as root, with every write kept
 * from the machine: in a mount namespace of their own, over a copy-on-write overlay of / (its
 * upper layer on a tmpfs, gone with the namespace), chrooted there. `apt-get install` installs,
 * `rpm --import` imports, `tee /etc/apt/...` writes, into the overlay only. The directory the
 * commands work in is bind-mounted in from the machine (they only read it).
 *
 * The overlay starts with no apt source but those the commands add: a host whose only source is
 * the release's, so `apt-get update` reads nothing from a network.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '../../helpers/packaging.js';

export interface Step {
  command: string;
  exitCode: number;
  output: string;
}

const SETUP = `
set -euo pipefail
t=$1; cwd=$2; shift 2
mount -t tmpfs tmpfs "$t/ov"
mkdir "$t/ov/upper" "$t/ov/work" "$t/ov/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$t/ov/upper,workdir=$t/ov/work" "$t/ov/root"
r=$t/ov/root
for m in proc sys dev; do mount --rbind "/$m" "$r/$m"; done
mount -t tmpfs tmpfs "$r/run"
mount -t tmpfs tmpfs "$r/tmp"
mkdir -p "$r$cwd" "$r/run/steps"
mount --bind "$cwd" "$r$cwd"
mount --bind "$t/steps" "$r/run/steps"
rm -f "$r/etc/apt/sources.list"
find "$r/etc/apt/sources.list.d" -mindepth 1 -delete
# One shell for all the commands, as one terminal: a cd holds for the next line.
chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 /bin/bash -c '
  cd "$1"; shift
  i=0
  for c in "$@"; do
    i=$((i + 1))
    eval "$c" </dev/null >"/run/steps/out.$i" 2>&1
    rc=$?
    echo "$rc" >"/run/steps/rc.$i"
    [ "$rc" = 0 ] || exit 0
  done' bash "$cwd" "$@"
`;

/**
 * Runs `commands` one after the other in one shell started in `cwd`, in a fresh sandbox, stopping
 * at the first that fails, as an administrator would. Returns the steps run, the failed one last.
 */
export async function runAsAdmin(cwd: string, commands: readonly string[]): Promise<Step[]> {
  const t = mkdtempSync(join(tmpdir(), 'wcf-sandbox-'));
  try {
    writeFileSync(join(t, 'setup.sh'), SETUP);
    await run('mkdir', [join(t, 'ov'), join(t, 'steps')]);
    const r = await run('unshare', ['--mount', '--propagation', 'private', 'bash', join(t, 'setup.sh'), t, cwd, ...commands], { timeoutMs: 300_000 });
    if (r.exitCode !== 0) throw new Error(`the sandbox could not be set up (${r.exitCode}): ${r.stderr}`);
    const steps: Step[] = [];
    for (let i = 1; i <= commands.length; i++) {
      let rc: string;
      try {
        rc = readFileSync(join(t, 'steps', `rc.${i}`), 'utf8');
      } catch {
        break;
      }
      steps.push({ command: commands[i - 1]!, exitCode: Number(rc.trim()), output: readFileSync(join(t, 'steps', `out.${i}`), 'utf8') });
    }
    return steps;
  } finally {
    rmSync(t, { recursive: true, force: true });
  }
}

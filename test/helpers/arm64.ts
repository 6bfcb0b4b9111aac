import { mkdtempSync, openSync, readSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { expect } from 'vitest';
import { ROOT, run, type RunResult } from './packaging.js';

/**
 * Running arm64 programs on this x86-64 machine: qemu-user-static's qemu-aarch64-static,
 * called explicitly (no binfmt_misc registration is needed or used), with `-L ROOT` so the
 * program's dynamic loader and libraries come from an arm64 root file system.
 */
export const QEMU = 'qemu-aarch64-static';

/** Fails loudly when qemu-user-static is missing: scripts/test.sh installs it, a run without it must not look green. */
export async function requireQemu(): Promise<void> {
  const r = await execa('sh', ['-c', 'command -v "$1"', 'sh', QEMU], { reject: false });
  if (r.exitCode !== 0) throw new Error(`${QEMU} is not installed (apt-get install qemu-user-static; scripts/test.sh does it as root): the arm64 tests run arm64 programs under it`);
}

/** `PROGRAM ARGS` under qemu with `root`'s loader and libraries, in an empty environment. */
export function runArm64(root: string, program: string, args: readonly string[], opts: { cwd?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  return run(QEMU, ['-L', root, program, ...args], { env: {}, cwd: opts.cwd, timeoutMs: opts.timeoutMs ?? 180_000 });
}

/**
 * An arm64 root with glibc and libstdc++ (what the arm64 binary links), unpacked in a temp
 * dir: the tar deploy/image/rootfs.sh makes (and caches), the same build-binary.sh uses.
 */
export async function arm64Sysroot(): Promise<string> {
  const r = await execa('bash', [join(ROOT, 'deploy/image/rootfs.sh'), '--variant', 'extract', '--include', 'libstdc++6', '--arch', 'arm64'], { cwd: ROOT, reject: false, timeout: 600_000 });
  if (r.exitCode !== 0) throw new Error(`rootfs.sh for arm64 failed: ${r.stderr}`);
  const dir = mkdtempSync(join(tmpdir(), 'wcf-arm64-root-'));
  await execa('tar', ['-C', dir, '-xf', r.stdout.trim()]);
  return dir;
}

/** An ELF file's machine (e_machine): 62 x86-64, 183 aarch64. */
export function elfMachine(path: string): number {
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(20);
    readSync(fd, head, 0, 20, 0);
    expect(head.subarray(0, 4), `${path} is an ELF file`).toEqual(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
    return head.readUInt16LE(18);
  } finally {
    closeSync(fd);
  }
}
export const EM_X86_64 = 62;
export const EM_AARCH64 = 183;

interface PlanJson {
  generated_at: number;
  entries: { ip: string; reason: string; score: number; expires: number | null; expires_in: number | null }[];
  [k: string]: unknown;
}

/**
 * Asserts that two `plan --json` outputs of the same feed, taken a few seconds apart, say
 * the same: the same entries for the same reasons and every other field equal, but for
 * what moves with the clock between the two runs: generated_at, each entry's expires_in,
 * its decayed score (equal to 1 in 100: the manual entries' tiny scores decay fastest), hence the order of two entries of nearly equal
 * score, and its expiry as computed from the score (equal to a few seconds).
 */
export function expectSamePlan(arm64Stdout: string, x64Stdout: string): void {
  const a = JSON.parse(arm64Stdout) as PlanJson;
  const b = JSON.parse(x64Stdout) as PlanJson;
  expect(a.entries.length).toBeGreaterThan(0);
  const byIp = (p: PlanJson) => new Map(p.entries.map((e) => [e.ip, e]));
  const still = (p: PlanJson) => ({ ...p, generated_at: 0, entries: p.entries.map((e) => `${e.reason} ${e.ip}`).sort() });
  expect(still(a)).toEqual(still(b));
  const other = byIp(b);
  for (const e of a.entries) {
    const o = other.get(e.ip)!;
    expect(Math.abs(e.score - o.score), `${e.ip}: score ${e.score} against ${o.score}`).toBeLessThanOrEqual(Math.abs(o.score) / 100);
    if (e.expires === null || o.expires === null) expect(e.expires, e.ip).toBe(o.expires);
    else expect(Math.abs(e.expires - o.expires), `${e.ip}: expires ${e.expires} against ${o.expires}`).toBeLessThanOrEqual(5);
  }
}

import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';

export const ROOT = join(import.meta.dirname, '../..');
export const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

export interface RunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  cwd?: string;
  /** The WHOLE environment of the child (nothing is inherited) when given. */
  env?: Record<string, string>;
  timeoutMs?: number;
}

/** Runs a command without a shell; never throws on a non-zero exit. */
export async function run(file: string, args: string[], opts: RunOptions = {}): Promise<RunResult> {
  const r = await execa(file, args, {
    reject: false,
    cwd: opts.cwd,
    env: opts.env,
    extendEnv: opts.env === undefined,
    timeout: opts.timeoutMs ?? 120_000,
    stdin: 'ignore',
  });
  return { exitCode: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr) };
}

/** `bash scripts/<name> ...args` from the repository root. */
export function runScript(name: string, args: string[], env: Record<string, string> = {}, timeoutMs?: number): Promise<RunResult> {
  return run('bash', [join(ROOT, 'scripts', name), ...args], { cwd: ROOT, env: { ...inheritedEnv(), ...env }, timeoutMs });
}

function inheritedEnv(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) out[k] = v;
  return out;
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `wcf-pkg-${prefix}-`));
}

/** Permission bits, e.g. 0o600. */
export function modeOf(path: string): number {
  return statSync(path).mode & 0o7777;
}

export function octal(mode: number): string {
  return '0' + mode.toString(8);
}

/** What `wcf-agent --version` prints for `version`: one line, the version, then the build's commit and Node's version. */
export function versionLine(version: string): RegExp {
  return new RegExp(`^wcf-agent ${version.replace(/\./g, '\\.')} \\(commit [0-9a-z]+, Node v\\d+\\.\\d+\\.\\d+\\)$`);
}

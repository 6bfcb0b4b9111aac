import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';

export const ROOT = join(import.meta.dirname, '../..');
export const CLI = join(ROOT, 'dist/cli.js');

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Run the built CLI (`node dist/cli.js`) with the Node running the tests (24). */
export async function runCli(args: string[], env: Record<string, string> = {}, prefix: string[] = []): Promise<CliResult> {
  const [file, ...rest] = [...prefix, process.execPath, CLI, ...args];
  const r = await execa(file!, rest, {
    reject: false,
    env: { WCF_LOG_LEVEL: 'info', WCF_RETRY_MIN_DELAY_MS: '20', ...env },
    extendEnv: true,
    timeout: 120_000,
  });
  return { exitCode: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr) };
}

/** Start the CLI as a long-running child (the daemon). */
export function spawnCli(args: string[], env: Record<string, string> = {}, prefix: string[] = []): ResultPromise {
  const [file, ...rest] = [...prefix, process.execPath, CLI, ...args];
  return execa(file!, rest, {
    reject: false,
    env: { WCF_LOG_LEVEL: 'info', WCF_RETRY_MIN_DELAY_MS: '20', ...env },
    extendEnv: true,
    buffer: false,
    stdout: 'pipe',
    stderr: 'pipe',
  });
}

/** A temp dir with a config.json; returns its path and the dir. */
export function writeConfig(values: Record<string, unknown>): { path: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'wcf-it-'));
  const path = join(dir, 'config.json');
  // 0600 as install.sh makes it: the config holds the token (check-config warns otherwise).
  // No start-up delay unless a test asks for one: a restarted daemon's first cycle is what many tests wait for.
  writeFileSync(path, JSON.stringify({ state_dir: 'state', plugin: 'dry-run', retries: 1, startup_delay_seconds: 0, ...values }, null, 2), { mode: 0o600 });
  return { path, dir };
}

/**
 * A config for the daemon and fault tests: the simulator's agent, no retries, no jitter and
 * short timeouts, so a failing cycle fails at once; rules in `<dir>/state/dry-run.ipset`.
 */
export function fastFailConfig(sim: { agid: string; url: string; token: string }, extra: Record<string, unknown> = {}) {
  const cfg = writeConfig({
    agid: sim.agid,
    base_url: sim.url,
    token: sim.token,
    retries: 0,
    jitter_seconds: 0,
    request_timeout_ms: 1000,
    connect_timeout_ms: 500,
    ...extra,
  });
  return { ...cfg, rules: join(cfg.dir, 'state', 'dry-run.ipset'), state: join(cfg.dir, 'state') };
}

/** Poll `check` until it returns a truthy value or the deadline passes. */
export async function waitFor<T>(check: () => T | Promise<T>, what: string, timeoutMs = 20_000, everyMs = 50): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** The entries in the dry-run backend's rules file (`add SET ENTRY` lines), as written. */
export function dryRunEntries(rules: string): string[] {
  return readFileSync(rules, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('add '))
    .map((l) => l.split(' ')[2]!);
}

/** The addresses the last cycle applied, from `<state_dir>/applied-<plugin>.json` (what `sync --json` no longer lists), sorted. */
export function appliedIps(stateDir: string, plugin = 'dry-run'): string[] {
  const set = JSON.parse(readFileSync(join(stateDir, `applied-${plugin}.json`), 'utf8')) as { entries: { cidr: string }[] };
  return set.entries.map((e) => e.cidr).sort();
}

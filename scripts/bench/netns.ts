/**
 * The benchmark's network namespace: created once, removed on every way out
 * (normal end, error, SIGINT/SIGTERM/SIGHUP, uncaught exception). Nothing the
 * benchmark does touches the machine's own ruleset: every firewall command
 * runs through `ip netns exec`.
 */
import { execFileSync } from 'node:child_process';
import { execa } from 'execa';
import { createRunner } from '../../src/firewall/exec.js';
import type { CommandRunner } from '../../src/exec/runner.js';

export interface BenchNetns {
  readonly name: string;
  /** Runs firewall commands inside the namespace (what the plugins use). */
  readonly runner: CommandRunner;
  /** Run a command inside the namespace; rejects on failure. */
  exec(file: string, args: readonly string[], input?: string): Promise<string>;
  /** Remove every firewall object in the namespace (between runs). */
  reset(): Promise<void>;
}

const cleanups: Array<() => void> = [];
let exiting = false;

/** Synchronous cleanups, run once on any exit path (registered by the namespace and the child processes). Returns an unregister function. */
export function onExit(fn: () => void): () => void {
  cleanups.push(fn);
  return () => {
    const i = cleanups.indexOf(fn);
    if (i !== -1) cleanups.splice(i, 1);
  };
}

function runCleanups(): void {
  for (const fn of cleanups.splice(0).reverse()) {
    try {
      fn();
    } catch {
      // best effort: keep removing the rest
    }
  }
}

process.once('exit', runCleanups);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(sig, () => {
    if (exiting) return;
    exiting = true;
    process.stderr.write(`\nbench: ${sig}, cleaning up\n`);
    runCleanups();
    process.exit(130);
  });
}
process.once('uncaughtException', (err) => {
  process.stderr.write(`bench: ${err.stack ?? String(err)}\n`);
  runCleanups();
  process.exit(1);
});

/** Create the namespace; it is deleted on any exit of this process. */
export async function createBenchNetns(): Promise<BenchNetns> {
  if (process.getuid?.() !== 0) throw new Error('run as root (the benchmark creates a network namespace)');
  const name = `wcfbench-${process.pid}`;
  await execa('ip', ['netns', 'add', name]);
  onExit(() => execFileSync('ip', ['netns', 'del', name], { stdio: 'ignore' }));
  const ns = useBenchNetns(name);
  await ns.exec('ip', ['link', 'set', 'lo', 'up']);
  return ns;
}

/** A namespace created by another process (the benchmark's workers); this one does not delete it. */
export function useBenchNetns(name: string): BenchNetns {
  const exec = async (file: string, args: readonly string[], input?: string): Promise<string> =>
    (await execa('ip', ['netns', 'exec', name, file, ...args], { input: input ?? '', env: { LC_ALL: 'C' } })).stdout;
  return {
    name,
    runner: createRunner(['ip', 'netns', 'exec', name], { timeoutMs: 900_000 }),
    exec,
    async reset() {
      // A fresh namespace has empty tables; this brings it back there. Rules
      // first: a set still referenced by a rule cannot be destroyed.
      await exec('iptables', ['-F']);
      await exec('iptables', ['-X']);
      await exec('ipset', ['destroy']);
      await exec('nft', ['flush', 'ruleset']);
    },
  };
}

/** Remove the namespace now (also runs the other registered cleanups). */
export function cleanupNow(): void {
  runCleanups();
}

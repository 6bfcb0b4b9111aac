/** What the standalone benchmarks share: their `--name value` arguments and throwaway network namespaces. */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { execa } from 'execa';
import { onExit } from '../netns.js';

/** The built agent the benchmarks run (`npm run build` first). */
export const CLI = join(import.meta.dirname, '..', '..', '..', 'dist', 'cli.js');

/** The value after `--name`, else `fallback`. */
export function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i !== -1 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

let nsCount = 0;

/** A network namespace named `<prefix>-<pid>-<n>`, removed when this process exits; `exec` runs a command inside it. */
export async function benchNetns(prefix: string): Promise<{ name: string; exec: (file: string, args: string[], input?: string) => Promise<string> }> {
  const name = `${prefix}-${process.pid}-${++nsCount}`;
  await execa('ip', ['netns', 'add', name]);
  onExit(() => execFileSync('ip', ['netns', 'del', name], { stdio: 'ignore' }));
  return { name, exec: async (file, args, input) => (await execa('ip', ['netns', 'exec', name, file, ...args], { env: { LC_ALL: 'C' }, input: input ?? '' })).stdout };
}

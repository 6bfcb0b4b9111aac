import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { ROOT } from './cli.js';

/**
 * tsc's errors for TypeScript sources the test writes, one list per source, from one tsc
 * run. The files go under node_modules/.cache so that the packages they import resolve.
 * What tests use it for: a JSON or YAML document written as an object literal of a
 * published type, where tsc's excess-property check names any field the type lacks.
 */
export async function typeErrors(sources: readonly string[], what: string): Promise<string[][]> {
  const dir = join(ROOT, 'node_modules', '.cache', `wcf-${what}-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  try {
    const files = sources.map((source, i) => {
      const file = join(dir, `m${i}.ts`);
      writeFileSync(file, source);
      return file;
    });
    const tsc = join(ROOT, 'node_modules', '.bin', 'tsc');
    const r = await execa(tsc, ['--ignoreConfig', '--noEmit', '--strict', '--skipLibCheck', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--pretty', 'false', ...files], {
      reject: false,
      cwd: dir,
    });
    const out: string[][] = sources.map(() => []);
    for (const line of String(r.stdout).split('\n')) {
      const hit = /m(\d+)\.ts\(\d+,\d+\): error TS\d+: (.*)$/.exec(line);
      if (hit) out[Number(hit[1])]!.push(hit[2]!);
    }
    if (r.exitCode !== 0 && out.every((l) => l.length === 0)) throw new Error(`tsc failed without a message per file:\n${r.stdout}\n${r.stderr}`);
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

import { join } from 'node:path';
import * as esbuild from 'esbuild';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../../..');

/**
 * A daemon's signals belong to the daemon: libraries that install their own
 * SIGTERM/SIGINT handlers and re-raise the signal (signal-exit, brought in by
 * execa; when-exit, brought in by conf) once killed it mid-apply. What the
 * shipped agent is built from must contain none of them.
 */
describe('the shipped agent', () => {
  it('bundles no library that hooks process signals', async () => {
    const r = await esbuild.build({
      entryPoints: [join(ROOT, 'src/cli.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      write: false,
      metafile: true,
      logLevel: 'silent',
      outdir: join(ROOT, 'dist/no-write'),
    });
    const inputs = Object.keys(r.metafile.inputs);
    // The bundle really holds the agent and its libraries (else the check below proves nothing).
    expect(inputs.some((p) => p.includes('node_modules/pino/'))).toBe(true);
    expect(inputs.some((p) => p.endsWith('src/exec/run.ts'))).toBe(true);
    expect(inputs.filter((p) => /node_modules\/(execa|signal-exit|when-exit)\//.test(p))).toEqual([]);
  });
});

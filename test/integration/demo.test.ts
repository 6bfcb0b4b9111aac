// `npm run demo` (after the build): simulator on loopback, one `sync --once --dry-run`, the plan table.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, ROOT } from '../helpers/cli.js';

// The demo makes its temp dir under TMPDIR and removes it (it holds a token): give it one to check that in.
const tmp = mkdtempSync(join(tmpdir(), 'wcf-demo-test-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('demo', () => {
  it('runs the simulator, a dry-run sync and prints the plan table and summary', async () => {
    expect(existsSync(CLI), 'dist/cli.js missing: build first').toBe(true);
    const r = await execa(process.execPath, [join(ROOT, 'scripts/demo.mjs')], {
      cwd: ROOT,
      reject: false,
      // 5000: enough for the simulator's 1500-item same-ts run, which the demo leaves out.
      env: { DEMO_INDICATORS: '5000', TMPDIR: tmp, WCF_LOG_LEVEL: 'info' },
      extendEnv: true,
      timeout: 120_000,
    });
    expect(r.exitCode, String(r.stderr)).toBe(0);
    const out = String(r.stdout);
    expect(out).toMatch(/\(5000 indicators\)/);
    expect(out).toMatch(/^reason\s+ip\s+score now\s+expires in$/m);
    expect(out).toMatch(/^(manual|score)\s+\d+\.\d+\.\d+\.\d+(\/\d+)?\s+\d+\.\d\d\s+/m);
    const summary = /^(\d+) entries \((\d+) manual, (\d+) score\) of \d+ feed indicators at /m.exec(out);
    expect(summary, out).not.toBeNull();
    const [, total, manual, score] = summary!.map(Number);
    expect(total).toBeGreaterThan(0);
    expect(manual! + score!).toBe(total);
    // The rendered rules were written and shown, and nothing was applied.
    expect(out).toMatch(/nothing applied/);
    expect(out).toMatch(/^add wcf-blocklist \d+\.\d+\.\d+\.\d+/m);
    expect(String(r.stderr)).toMatch(new RegExp(`sync ok: ${total} entries on dry-run`));
    // No warning at all (the first line used to be one about items sharing a ts), and the temp dir is gone.
    expect(String(r.stderr)).not.toMatch(/WARN|Warning|share ts/);
    expect(readdirSync(tmp).filter((d) => d.startsWith('wcf-demo-'))).toEqual([]);
  });
});

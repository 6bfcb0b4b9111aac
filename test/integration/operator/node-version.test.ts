import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { CLI, ROOT } from '../../helpers/cli.js';
import { MINIMUM_NODE, atLeast } from '../../../src/node-version.js';

// The CLI started with a Node too old for it. An old Node is simulated by changing the version
// the running Node reports before the entry module loads (the check reads process.versions.node);
// everything else is the built dist/cli.js as an operator runs it.
const OLD_NODE = '--import=data:text/javascript,Object.defineProperty(process.versions,"node",{value:"20.11.1"})';

describe('Node version check', () => {
  it('on a Node too old: one line naming the Node found, the Node needed and commands that work; exit 2', async () => {
    for (const args of [['--version'], ['check-config', '--config', '/nonexistent.json'], ['plan']]) {
      const r = await execa(process.execPath, [OLD_NODE, CLI, ...args], { reject: false });
      expect(r.exitCode, args.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toBe(
        `wcf-agent: needs Node.js ${MINIMUM_NODE} or later, found v20.11.1 (${process.execPath}); ` +
          'in a checkout run npx wcf-agent or node_modules/.bin/node dist/cli.js (npm ci installs Node 24 there), or use the single binary',
      );
    }
  });

  it('on the Node npm ci installed: runs', async () => {
    const r = await execa(process.execPath, [CLI, '--version'], { reject: false });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^wcf-agent ${(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version} `));
  });

  it('dist/cli.js is executable after the build, and runs through its shebang', async () => {
    expect(statSync(CLI).mode & 0o111).toBe(0o111);
    // The shebang's `env node` finds the Node of node_modules/.bin first, as under npx.
    const r = await execa(CLI, ['--version'], { reject: false, env: { PATH: `${join(ROOT, 'node_modules/.bin')}:/usr/bin:/bin` } });
    expect(r.exitCode, r.stderr).toBe(0);
  });

  it('the minimum is the one package.json promises (engines)', () => {
    const engines = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
    expect(engines).toBe(`>=${MINIMUM_NODE}`);
    expect(atLeast('24.5.0', MINIMUM_NODE)).toBe(true);
    expect(atLeast('24.4.1', MINIMUM_NODE)).toBe(false);
    expect(atLeast('v24.21.0', MINIMUM_NODE)).toBe(true);
    expect(atLeast('22.18.9', MINIMUM_NODE)).toBe(false);
    expect(atLeast('20.20.2', MINIMUM_NODE)).toBe(false);
  });
});

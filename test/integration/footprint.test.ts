import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

/**
 * What `wcf-agent run` loads when the URL feed is off, seen from a fresh Node process that
 * imports the built `run` command (and so everything it imports before its first cycle).
 * Each module left out here is resident memory every host of a fleet would otherwise pay.
 */
function loadedByRunCommand(): { builtins: string[]; files: string[] } {
  const runModule = pathToFileURL(join(ROOT, 'dist/cli/commands/run.js')).href;
  const script = `
    import { registerHooks } from 'node:module';
    const files = [];
    registerHooks({ load(url, context, next) { files.push(url); return next(url, context); } });
    await import(${JSON.stringify(runModule)});
    process.stdout.write(JSON.stringify({ builtins: process.moduleLoadList, files }));
  `;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as { builtins: string[]; files: string[] };
}

describe('what the daemon loads', () => {
  const loaded = loadedByRunCommand();

  it('loads the run command itself (the check below looks at a real import)', () => {
    expect(loaded.files.some((f) => f.endsWith('/dist/agent/daemon.js'))).toBe(true);
    expect(loaded.builtins).toContain('NativeModule http');
  });

  it("does not load Node's bundled undici, which an ES import of node:http pulls in (~10 MB)", () => {
    expect(loaded.builtins.filter((m) => m.includes('deps/undici'))).toEqual([]);
  });

  it('does not load the URL feed, the resolver backends or the public suffix list while url_feed is off', () => {
    const urlFeed = loaded.files.filter((f) => /\/dist\/dns\/|\/tldts|\/dist\/agent\/dns-cycle\.js|\/dist\/feed\/(url-|host\.js)/.test(f));
    expect(urlFeed).toEqual([]);
  });
});

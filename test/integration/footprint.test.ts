import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

interface BuildMeta {
  outputs: Record<string, { entryPoint?: string; inputs: Record<string, unknown> }>;
}

/**
 * What `wcf-agent run` loads when the URL feed is off, seen from a fresh Node process that
 * imports the built `run` command's chunk of dist/ (and so everything it imports before its
 * first cycle). The build's metafile says which sources each loaded chunk holds. Each
 * module left out here is resident memory every host of a fleet would otherwise pay.
 */
function loadedByRunCommand(): { builtins: string[]; sources: string[] } {
  const meta = JSON.parse(readFileSync(join(ROOT, 'dist/cli.meta.json'), 'utf8')) as BuildMeta;
  const runChunk = Object.keys(meta.outputs).find((file) => meta.outputs[file]!.entryPoint === 'src/cli/commands/run.ts');
  if (!runChunk) throw new Error('dist/cli.meta.json names no chunk for src/cli/commands/run.ts');
  const script = `
    import { registerHooks } from 'node:module';
    const files = [];
    registerHooks({ load(url, context, next) { files.push(url); return next(url, context); } });
    await import(${JSON.stringify(pathToFileURL(join(ROOT, runChunk)).href)});
    process.stdout.write(JSON.stringify({ builtins: process.moduleLoadList, files }));
  `;
  const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as { builtins: string[]; files: string[] };
  const byUrl = new Map(Object.keys(meta.outputs).map((file) => [pathToFileURL(join(ROOT, file)).href, file]));
  const sources = out.files.filter((url) => !url.startsWith('node:')).flatMap((url) => {
    const file = byUrl.get(url);
    if (file === undefined) throw new Error(`loaded ${url}, which is not part of the build`);
    return Object.keys(meta.outputs[file]!.inputs);
  });
  return { builtins: out.builtins, sources };
}

describe('what the daemon loads', () => {
  const loaded = loadedByRunCommand();

  it('loads the run command itself (the checks below look at a real import)', () => {
    expect(loaded.sources).toContain('src/agent/daemon/daemon.ts');
    expect(loaded.sources.some((s) => s.includes('node_modules/zod/'))).toBe(true);
    expect(loaded.builtins).toContain('NativeModule http');
  });

  it("does not load Node's bundled undici, which an ES import of node:http pulls in (~10 MB)", () => {
    expect(loaded.builtins.filter((m) => m.includes('deps/undici'))).toEqual([]);
  });

  it('does not load TLS (node:tls, node:https and OpenSSL, ~6 MB) before a request needs it: the simulator here is plain http', () => {
    expect(loaded.builtins.filter((m) => /^NativeModule (tls|https|crypto)$/.test(m))).toEqual([]);
  });

  it('does not load the URL feed, the resolver backends or the public suffix list while url_feed is off', () => {
    const urlFeed = loaded.sources.filter((s) => /^src\/dns\/|\/tldts|^src\/agent\/cycle\/url-feed-step\.ts$|^src\/feed\/(url-|host\.ts)/.test(s));
    expect(urlFeed).toEqual([]);
  });

  it('does not load the metrics endpoint or the admin commands while they are not asked for', () => {
    const unasked = loaded.sources.filter((s) => /\/prom-client\/|^src\/metrics\/|^src\/cli\/commands\/(?!run\.ts)/.test(s));
    expect(unasked).toEqual([]);
  });
});

import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { fastFailConfig, ROOT, waitFor } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';

interface BuildMeta {
  outputs: Record<string, { entryPoint?: string; inputs: Record<string, unknown> }>;
}

/**
 * What a live `wcf-agent run` has loaded once its first cycle is done, with the URL feed and
 * the metrics endpoint off: the built CLI runs as a daemon against the simulator with a preload
 * (NODE_OPTIONS=--import) that records every module Node loads and writes the list on SIGUSR2.
 * The build's metafile says which sources each loaded chunk holds. Each module left out here is
 * resident memory every host of a fleet would otherwise pay (measured in scripts/bench, not here).
 */

const PRELOAD = `
import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';
const files = [];
registerHooks({ load(url, context, next) { files.push(url); return next(url, context); } });
process.on('SIGUSR2', () => writeFileSync(process.env.FOOTPRINT_OUT, JSON.stringify({ builtins: process.moduleLoadList, files })));
`;

let sim: Simulator;
let tmp: string;
let loaded: { builtins: string[]; sources: string[] };

async function loadedByLiveRun(): Promise<{ builtins: string[]; sources: string[] }> {
  const meta = JSON.parse(readFileSync(join(ROOT, 'dist/cli.meta.json'), 'utf8')) as BuildMeta;
  const preload = join(tmp, 'preload.mjs');
  writeFileSync(preload, PRELOAD);
  const out = join(tmp, 'loaded.json');
  const cfg = fastFailConfig(sim, { state_dir: join(tmp, 'state') });
  const d = new DaemonProcess(cfg.path, { NODE_OPTIONS: `--import=${pathToFileURL(preload).href}`, FOOTPRINT_OUT: out, WCF_AGENT_MINUTE_MS: '60000' });
  let list: { builtins: string[]; files: string[] };
  try {
    await d.waitForLog(/^cycle done/);
    d.signal('SIGUSR2');
    await waitFor(() => existsSync(out), 'the list of loaded modules');
    list = JSON.parse(readFileSync(out, 'utf8')) as typeof list;
  } finally {
    expect(await d.stop()).toBe(0);
    rmSync(cfg.dir, { recursive: true, force: true });
  }
  const byUrl = new Map(Object.keys(meta.outputs).map((file) => [pathToFileURL(join(ROOT, file)).href, file]));
  const sources = list.files
    .filter((url) => !url.startsWith('node:') && url !== pathToFileURL(preload).href)
    .flatMap((url) => {
      const file = byUrl.get(url);
      if (file === undefined) throw new Error(`loaded ${url}, which is not part of the build`);
      return Object.keys(meta.outputs[file]!.inputs);
    });
  return { builtins: list.builtins, sources };
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'wcf-footprint-'));
  sim = await startSimulator({ indicators: 200, seed: 67 });
  loaded = await loadedByLiveRun();
});
afterAll(async () => {
  await sim?.close();
  rmSync(tmp, { recursive: true, force: true });
});

describe('what a running daemon has loaded after its first cycle', () => {
  it('the daemon, the cycle, its HTTP client and the firewall backend (the checks below look at a real run)', () => {
    for (const s of ['src/agent/daemon/daemon.ts', 'src/agent/cycle/cycle.ts', 'src/agent/daemon/watcher.ts', 'src/firewall/dry-run.ts']) expect(loaded.sources).toContain(s);
    expect(loaded.sources.some((s) => s.includes('node_modules/zod/'))).toBe(true);
    expect(loaded.builtins).toContain('NativeModule http');
  });

  it("not Node's bundled undici, which an ES import of node:http pulls in", () => {
    expect(loaded.builtins.filter((m) => m.includes('deps/undici'))).toEqual([]);
  });

  it('not TLS (node:tls, node:https, node:crypto) while the API is plain http', () => {
    expect(loaded.builtins.filter((m) => /^NativeModule (tls|https|crypto)$/.test(m))).toEqual([]);
  });

  it('not the URL feed, the resolver backends or the public suffix list while url_feed is off', () => {
    const urlFeed = loaded.sources.filter((s) => /^src\/dns\/|\/tldts|^src\/agent\/cycle\/url-feed\/|^src\/feed\/(url-|host\.ts)/.test(s));
    expect(urlFeed).toEqual([]);
  });

  it('not the proxy tunnel (route, CONNECT, its Agent) while no proxy is configured', () => {
    expect(loaded.sources.filter((s) => /^src\/api\/(proxy-route|proxy-tunnel|tunnel-agent)\.ts$/.test(s))).toEqual([]);
  });

  it('not the metrics endpoint or the admin commands while they are not asked for', () => {
    const unasked = loaded.sources.filter((s) => /\/prom-client\/|^src\/metrics\/|^src\/cli\/commands\/(?!run\.ts)/.test(s));
    expect(unasked).toEqual([]);
  });
});

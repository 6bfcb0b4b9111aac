import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { runCli, waitFor, writeConfig } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { isRoot, Netns } from '../netns/netns.js';

/**
 * What the daemon says is what the kernel holds: another process flushes the agent's set of
 * 100,000 entries, and /readyz, `status` and the metrics say so (with the reason) until the
 * watcher's repair is in, then say enforcing again. The repair is held back a few seconds by an
 * `nft` first on PATH that slows writes (not check-mode runs), so the window can be seen.
 */

const SIZE = 100_000;
let sim: Simulator;
let ns: Netns;
let d: DaemonProcess | undefined;
const dirs: string[] = [];

beforeAll(async () => {
  if (!isRoot) throw new Error('the kernel truth tests need root (network namespaces)');
  // Stamped ahead of the agent's clock, as the scale benchmark does, so decay leaves most indicators above the threshold.
  sim = await startSimulator({ indicators: 120_000, seed: 5, now: Math.floor(Date.now() / 1000) + 30 * 86_400, agentConfig: { maximum_rules: String(SIZE), score_threshold: '1', sync_time: '600', running: 'true' } });
  ns = await Netns.create();
});
afterAll(async () => {
  await d?.stop();
  await ns?.destroy();
  await sim?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Elements of the agent's two sets, counted from `nft list set` (independent of the agent). */
async function kernelCount(): Promise<number> {
  let n = 0;
  for (const set of ['wcf-blocklist', 'wcf-blocklist-nets']) {
    const { stdout } = await execa('ip', ['netns', 'exec', ns.name, 'nft', '-j', 'list', 'set', 'inet', 'wcf_agent', set]);
    const doc = JSON.parse(stdout) as { nftables: Array<{ set?: { elem?: unknown[] } }> };
    for (const item of doc.nftables) n += item.set?.elem?.length ?? 0;
  }
  return n;
}

describe('a set flushed by another process at 100,000 entries', () => {
  it('/readyz, status and the metrics say the kernel lacks the entries until the watcher has put them back', { timeout: 180_000 }, async () => {
    const shims = mkdtempSync(join(tmpdir(), 'wcf-shim-'));
    dirs.push(shims);
    const slow = join(shims, 'slow');
    const realNft = (await execa('sh', ['-c', 'command -v nft'])).stdout.trim();
    writeFileSync(join(shims, 'nft'), `#!/bin/sh\ncase " $* " in *" -c "*) ;; *" -f "*) if [ -e '${slow}' ]; then sleep 4; fi;; esac\nexec '${realNft}' "$@"\n`, { mode: 0o755 });
    const cfg = writeConfig({
      agid: sim.agid, base_url: sim.url, token: sim.token, retries: 0, jitter_seconds: 0, plugin: 'nftables', netns: ns.name,
      metrics_listen: '127.0.0.1:0', decision_poll_seconds: 0, watch_interval_seconds: 1, startup_delay_seconds: 0,
    });
    dirs.push(cfg.dir);
    d = new DaemonProcess(cfg.path, { WCF_AGENT_MINUTE_MS: '60000', PATH: `${shims}:${process.env.PATH ?? ''}` });
    const base = /(http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec((await d.waitForLog(/^metrics listening on /)).msg)![1]!;
    const get = async (path: string) => {
      const r = await fetch(`${base}${path}`);
      return { status: r.status, text: (await r.text()).trim() };
    };
    const metric = async (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec((await get('/metrics')).text)?.[1]);
    await d.waitForLog(/^cycle done/, 1, 120_000);
    const applied = await kernelCount();
    expect(applied).toBeGreaterThan(SIZE * 0.9);
    expect((await get('/readyz')).status).toBe(200);

    writeFileSync(slow, '');
    await ns.exec('nft', ['flush', 'set', 'inet', 'wcf_agent', 'wcf-blocklist']);
    // Noticed within seconds, and said: not ready, with the reason.
    const notReady = await waitFor(async () => {
      const r = await get('/readyz');
      return r.status === 503 ? r : undefined;
    }, 'readyz 503 after the flush', 15_000);
    expect(notReady.text).toMatch(/^not ready: .*entries may be missing from the kernel; repairing$/);
    expect(await metric('wcf_agent_ready')).toBe(0);
    expect(await metric('wcf_agent_kernel_entries_missing')).toBeGreaterThan(0);
    // `status` (another process) checks the kernel itself and agrees.
    const status = await runCli(['status', '--json', '--config', cfg.path]);
    expect(status.exitCode, status.stderr).toBe(0);
    const s = JSON.parse(status.stdout) as { enforcing: boolean; enforcing_reason: string };
    expect(s.enforcing).toBe(false);
    expect(s.enforcing_reason).toMatch(/the kernel lacks entries the agent applied/);
    expect((await runCli(['status', '--probe', '--config', cfg.path])).exitCode).toBe(4);

    rmSync(slow);
    const back = await waitFor(async () => {
      const r = await get('/readyz');
      return r.status === 200 ? r : undefined;
    }, 'readyz 200 after the repair', 30_000);
    expect(back.text).toMatch(/^ready: nftables enforcing the last applied set/);
    expect(await kernelCount()).toBe(applied);
    expect(await metric('wcf_agent_kernel_entries_missing')).toBe(0);
    const after = JSON.parse((await runCli(['status', '--json', '--config', cfg.path])).stdout) as { enforcing: boolean };
    expect(after.enforcing).toBe(true);
    expect(await d.stop()).toBe(0);
    d = undefined;
  });
});

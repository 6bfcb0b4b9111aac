import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, waitFor, writeConfig } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { untilTwoAgree } from '../helpers/kernel.js';
import { largeSetLab, type LargeSetLab } from '../helpers/large-set.js';

/**
 * What the daemon says is what the kernel holds: another process flushes the agent's set of
 * 100,000 entries, and /readyz, `status` and the metrics say so (with the reason) until the
 * watcher's repair is in, then say enforcing again. The repair is held back a few seconds by an
 * `nft` first on PATH that slows writes (not check-mode runs), so the window can be seen.
 */

const SIZE = 100_000;
let lab: LargeSetLab;
let d: DaemonProcess | undefined;

beforeAll(async () => {
  lab = await largeSetLab(SIZE, 5, 600);
});
afterAll(async () => {
  await d?.stop();
  await lab?.close();
});

/** Elements of the agent's two sets, counted from `nft list set` (independent of the agent). */
function kernelCount(): Promise<number> {
  return untilTwoAgree(listCount, (n) => n);
}

async function listCount(): Promise<number> {
  let n = 0;
  for (const set of ['wcf-blocklist', 'wcf-blocklist-nets']) {
    const { stdout } = await execa('ip', ['netns', 'exec', lab.ns.name, 'nft', '-j', 'list', 'set', 'inet', 'wcf_agent', set]);
    const doc = JSON.parse(stdout) as { nftables: Array<{ set?: { elem?: unknown[] } }> };
    for (const item of doc.nftables) n += item.set?.elem?.length ?? 0;
  }
  return n;
}

describe('a set flushed by another process at 100,000 entries', () => {
  it('/readyz, status and the metrics say the kernel lacks the entries until the watcher has put them back', { timeout: 180_000 }, async () => {
    const slow = join(lab.dir('wcf-slow-'), 'slow');
    const path = await lab.nftShim(`case " $* " in *" -c "*) ;; *" -f "*) if [ -e '${slow}' ]; then sleep 4; fi;; esac`);
    const { sim, ns } = lab;
    const cfg = writeConfig({
      agid: sim.agid, base_url: sim.url, token: sim.token, retries: 0, jitter_seconds: 0, plugin: 'nftables', netns: ns.name,
      metrics_listen: '127.0.0.1:0', decision_poll_seconds: 0, watch_interval_seconds: 1, startup_delay_seconds: 0,
    });
    d = new DaemonProcess(cfg.path, { WCF_AGENT_MINUTE_MS: '60000', PATH: path });
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

  it('a set flushed while a verification is half done: readiness never says enforcing before every entry is back', { timeout: 180_000 }, async () => {
    const { sim, ns } = lab;
    await ns.exec('nft', ['flush', 'ruleset']);
    // The verification's check-mode runs (those deleting elements; the probe's delete none) slowed
    // to a second each while `slow` exists, and logged as they start: a verification of 100,000
    // entries (six runs, two at a time) then takes three seconds.
    const dir = lab.dir('wcf-slowcheck-');
    const slow = join(dir, 'slow');
    const starts = join(dir, 'starts');
    writeFileSync(starts, '');
    const path = await lab.nftShim(
      `case " $* " in *" -c "*) if [ -e '${slow}' ]; then in=$(mktemp); cat >"$in"; ` +
        `if grep -q '^delete element' "$in"; then echo c >>'${starts}'; sleep 1; fi; exec <"$in"; rm -f "$in"; fi;; esac`,
    );
    const cfg = writeConfig({
      agid: sim.agid, base_url: sim.url, token: sim.token, retries: 0, jitter_seconds: 0, plugin: 'nftables', netns: ns.name,
      metrics_listen: '127.0.0.1:0', decision_poll_seconds: 0, watch_interval_seconds: 1, startup_delay_seconds: 0,
    });
    d = new DaemonProcess(cfg.path, { WCF_AGENT_MINUTE_MS: '60000', PATH: path });
    const base = /(http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec((await d.waitForLog(/^metrics listening on /)).msg)![1]!;
    const readyz = async () => {
      const r = await fetch(`${base}/readyz`);
      return { status: r.status, text: (await r.text()).trim() };
    };
    await d.waitForLog(/^cycle done/, 1, 120_000);
    const applied = await kernelCount();
    await waitFor(async () => (await readyz()).status === 200, 'ready after the first cycle', 30_000);

    // Another process's harmless transaction starts a verification; once its third check-mode run
    // has started (the first two slices found whole), the set of addresses is flushed.
    writeFileSync(slow, '');
    await ns.exec('nft', ['add', 'table', 'inet', 'harmless']);
    await waitFor(() => readFileSync(starts, 'utf8').length >= 6, 'the verification’s third check run', 30_000, 20);
    await ns.exec('nft', ['flush', 'set', 'inet', 'wcf_agent', 'wcf-blocklist']);
    rmSync(slow);
    // That verification finds only the slices it checked after the flush, and says so (until it
    // ends, readiness is the last look's: no probe can know sooner). Their repair is not the whole
    // answer: from then on, every time /readyz says ready, every entry is in the kernel.
    const seen: string[] = [];
    await waitFor(async () => {
      const r = await readyz();
      seen.push(`${r.status} ${r.text.slice(0, 120)}`);
      return r.status === 503;
    }, 'readyz 503 once the verification has ended', 30_000, 50);
    await waitFor(async () => {
      const r = await readyz();
      seen.push(`${r.status} ${r.text.slice(0, 120)}`);
      if (r.status !== 200) return false;
      expect(await kernelCount(), seen.slice(-6).join('\n')).toBe(applied);
      return true;
    }, 'readyz 200 again', 60_000, 100);
    console.log('DBG', seen.join('\n'), '\n', d.raw.filter((l) => !/cycle|history|report/.test(l)).slice(-25).join('\n'));
    expect(d.count(/put back with the last applied set/)).toBeGreaterThanOrEqual(1);
    expect(await d.stop()).toBe(0);
    d = undefined;
  });
});


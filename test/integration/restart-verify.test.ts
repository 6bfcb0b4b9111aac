import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, writeConfig } from '../helpers/cli.js';
import { previousReleaseTable } from '../fixtures/earlier-tables.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { kernelEntries, untilTwoAgree } from '../helpers/kernel.js';
import { largeSetLab, type LargeSetLab } from '../helpers/large-set.js';

/**
 * A restart puts the last applied set back without reading the kernel's sets: the kernel is asked
 * in check mode whether it holds each applied entry, and only what it lacks is written (at a
 * million entries a listing costs nft 18 s and 645 MB). An address deleted while the daemon was
 * down is back after the restart all the same.
 */

let lab: LargeSetLab;
let d: DaemonProcess | undefined;
let cfgPath = '';

/** The marker the agent wrote on its table (its instance), for a table written in its place. */
async function marker(): Promise<string> {
  return /comment "(wcf-agent[^"]*)"/.exec(await lab.ns.exec('nft', ['list', 'set', 'inet', 'wcf_agent', 'wcf-blocklist-drops']))![1]!;
}

beforeAll(async () => {
  lab = await largeSetLab(5000, 21, 600);
});
afterAll(async () => {
  await d?.stop();
  await lab?.close();
});

describe('the start-up restore of a daemon', () => {
  it('checks the last applied set in the kernel instead of listing it, and puts back what is missing', { timeout: 120_000 }, async () => {
    const calls = join(lab.dir('wcf-calls-'), 'calls');
    writeFileSync(calls, '');
    const path = await lab.nftShim(`echo "$*" >> '${calls}'`);
    const cfg = writeConfig({
      agid: lab.sim.agid, base_url: lab.sim.url, token: lab.sim.token, retries: 0, jitter_seconds: 0, plugin: 'nftables', netns: lab.ns.name,
      decision_poll_seconds: 0, watch_interval_seconds: 1, startup_delay_seconds: 0,
    });
    cfgPath = cfg.path;
    d = new DaemonProcess(cfg.path, { WCF_AGENT_MINUTE_MS: '60000', PATH: path });
    await d.waitForLog(/^cycle done/, 1, 60_000);
    expect(await d.stop()).toBe(0);
    const kernel = () => untilTwoAgree(() => kernelEntries(lab.ns, 'nftables'), (l) => l.length);
    const applied = await kernel();
    expect(applied.length).toBeGreaterThan(4000);
    const gone = applied.find((c) => !c.includes('/'))!;
    await lab.ns.exec('nft', ['delete', 'element', 'inet', 'wcf_agent', 'wcf-blocklist', `{ ${gone} }`]);

    writeFileSync(calls, '');
    d = new DaemonProcess(cfg.path, { WCF_AGENT_MINUTE_MS: '60000', PATH: path });
    const restored = await d.waitForLog(/^restored the last known good set/, 1, 60_000);
    const during = readFileSync(calls, 'utf8').split('\n').filter(Boolean);
    // No listing of the agent's sets: asked in check mode, entry by entry.
    expect(during.filter((c) => /(^|\s)list set inet wcf_agent wcf-blocklist(-nets)?$/.test(c))).toEqual([]);
    expect(during.some((c) => c.startsWith('-c -f -'))).toBe(true);
    expect(Number(restored.added)).toBeGreaterThan(0);
    expect(await kernel()).toEqual(applied);
    expect(await d.stop()).toBe(0);
    d = undefined;
  });

  it('after an upgrade from a release that dropped in the filter stage: the history says the table was laid out again, not that entries were missing', { timeout: 120_000 }, async () => {
    const kernel = await untilTwoAgree(() => kernelEntries(lab.ns, 'nftables'), (l) => l.length);
    // The previous release's table holding the same entries, as an upgraded agent finds it.
    const table = previousReleaseTable(kernel.filter((c) => !c.includes('/')), kernel.filter((c) => c.includes('/')), 86_400, await marker());
    await lab.ns.exec('nft', ['-f', '-'], `add table inet wcf_agent\ndelete table inet wcf_agent\n${table}`);
    d = new DaemonProcess(cfgPath, { WCF_AGENT_MINUTE_MS: '60000' });
    const restored = await d.waitForLog(/^restored the last known good set/, 1, 60_000);
    expect(Number(restored.added)).toBe(0);
    expect(await d.stop()).toBe(0);
    d = undefined;
    const history = await runCli(['history', '0.0.0.0/0', '--json', '--config', cfgPath]);
    expect(history.exitCode, history.stderr).toBe(0);
    const notes = (JSON.parse(history.stdout) as { notes: Array<{ text: string }> }).notes.map((n) => n.text);
    const last = notes.filter((t) => /applied at start-up/.test(t)).at(-1);
    expect(last).toMatch(/laid out again \(they were laid out for drop_hook filter/);
    expect(last).not.toMatch(/were not in the kernel/);
  });
});

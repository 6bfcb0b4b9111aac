import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { waitFor, writeConfig } from '../../helpers/cli.js';
import { DaemonProcess } from '../../helpers/daemon.js';
import { ADDR, createLab, isRoot, type Lab } from '../../netns/netns.js';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { dashboardQueries, exposedNames, loadRules, PROMETHEUS_OWN, RULES_FILE, selectedNames, withVariables } from './monitoring.js';

/**
 * A real Prometheus (Debian's) scraping a real daemon: the daemon enforces nftables in a
 * test namespace (config `netns`) and serves /metrics on the machine's loopback, where
 * Prometheus scrapes it every second and evaluates deploy/prometheus/wcf-agent.rules.yml,
 * unchanged, every second. The daemon's minute is 2 s (WCF_AGENT_MINUTE_MS) and the
 * server's sync_time 1 minute, so "no successful sync for three intervals" is 6 s.
 *
 * WCF_MONITORING_RESULTS=FILE writes every dashboard query's result there (docs/monitoring.md
 * shows them).
 */

const MINUTE_MS = 2000;

interface PromAnswer<T> {
  status: string;
  data: T;
  error?: string;
}
interface RuleState {
  name: string;
  health: string;
  lastError?: string;
  lastEvaluation: string;
  type: 'alerting' | 'recording';
}
interface AlertState {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
  value: string;
}
type Vector = { metric: Record<string, string>; value: [number, string] }[];

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as AddressInfo;
  await new Promise((r) => srv.close(r));
  return port;
}

describe('a real Prometheus scraping a real daemon, with the rules loaded', () => {
  let sim: Simulator;
  let lab: Lab;
  let daemon: DaemonProcess | undefined;
  let prometheus: ResultPromise | undefined;
  let dir: string;
  let promUrl: string;
  let metricsUrl: string;
  let instance: string;

  const api = async <T>(path: string): Promise<T> => {
    const r = (await (await fetch(`${promUrl}/api/v1/${path}`)).json()) as PromAnswer<T>;
    if (r.status !== 'success') throw new Error(`Prometheus ${path}: ${r.error}`);
    return r.data;
  };
  const query = (expr: string) => api<{ resultType: string; result: Vector }>(`query?query=${encodeURIComponent(expr)}`);
  const alerts = async () => (await api<{ alerts: AlertState[] }>('alerts')).alerts.filter((a) => a.labels.job === 'wcf-agent' || a.labels.alertname!.startsWith('WcfAgent'));
  const ruleStates = async () => (await api<{ groups: { rules: RuleState[] }[] }>('rules')).groups.flatMap((g) => g.rules);

  beforeAll(async () => {
    if (!isRoot) throw new Error('this test needs root: the daemon enforces nftables in a network namespace');
    sim = await startSimulator({ indicators: 200, seed: 39, agentConfig: { maximum_rules: '1000', score_threshold: '4', sync_time: '1', running: 'true' } });
    sim.upsertIndicator({ ip: ADDR.blocked, score: 9.9 });
    lab = await createLab();
    dir = mkdtempSync(join(tmpdir(), 'wcf-prometheus-'));
    const { path } = writeConfig({
      agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'nftables', netns: lab.host.name,
      retries: 0, jitter_seconds: 0, metrics_listen: '127.0.0.1:0', connect_timeout_ms: 500, request_timeout_ms: 1000, decision_poll_seconds: 0,
    });
    daemon = new DaemonProcess(path, { WCF_AGENT_MINUTE_MS: String(MINUTE_MS) });
    metricsUrl = /(http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec((await daemon.waitForLog(/^metrics listening on /)).msg)![1]!;
    instance = new URL(metricsUrl).host;
    await daemon.waitForLog(/^cycle done/);

    const port = await freePort();
    promUrl = `http://127.0.0.1:${port}`;
    writeFileSync(
      join(dir, 'prometheus.yml'),
      stringify({
        global: { scrape_interval: '1s', scrape_timeout: '900ms', evaluation_interval: '1s' },
        rule_files: [RULES_FILE],
        scrape_configs: [{ job_name: 'wcf-agent', static_configs: [{ targets: [instance] }] }],
      }),
    );
    prometheus = execa('prometheus', [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], {
      reject: false,
      stdin: 'ignore',
      all: true,
    });
    await waitFor(async () => (await fetch(`${promUrl}/-/ready`).catch(() => undefined))?.ok, 'Prometheus ready', 30_000, 200).catch((err: Error) => {
      throw new Error(`${err.message}: ${String((prometheus as unknown as { all?: string }).all ?? '')}`);
    });
  }, 120_000);

  afterAll(async () => {
    if (prometheus?.pid) process.kill(prometheus.pid, 'SIGTERM');
    await prometheus;
    await daemon?.stop();
    await lab?.destroy();
    await sim?.close().catch(() => undefined);
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('every metric the rules and the dashboard name is on the daemon\'s /metrics', async () => {
    const exposed = exposedNames(await (await fetch(metricsUrl)).text());
    const recorded = new Set(loadRules().flatMap((r) => (r.record ? [r.record] : [])));
    const named = new Map<string, string>();
    for (const r of loadRules()) for (const n of selectedNames(r.expr).names) named.set(n, `rule ${r.alert ?? r.record}`);
    for (const q of dashboardQueries()) for (const n of selectedNames(q.expr).names) named.set(n, `panel "${q.panel}" ${q.refId}`);
    const missing = [...named].filter(([n]) => !exposed.has(n) && !recorded.has(n) && !PROMETHEUS_OWN.has(n)).map(([n, where]) => `${n} (${where})`);
    expect(missing).toEqual([]);
    // The check can fail: a name the agent does not export is caught.
    expect(exposed.has('wcf_agent_entries_applied')).toBe(true);
    expect(exposed.has('wcf_agent_entries_aplied')).toBe(false);
  });

  it('scrapes the daemon and evaluates every rule with health "ok"; nothing pending while the API answers', async () => {
    const targets = await waitFor(async () => {
      const t = (await api<{ activeTargets: { health: string; labels: Record<string, string>; lastError: string; lastScrape: string }[] }>('targets')).activeTargets;
      return t.length === 1 && t[0]!.health === 'up' ? t : undefined;
    }, 'the daemon scraped', 30_000, 250);
    expect(targets[0]!.labels).toMatchObject({ job: 'wcf-agent', instance });
    const rules = await waitFor(async () => {
      const r = await ruleStates();
      // Evaluated after a scrape had the daemon's series (the very first evaluation may come before any scrape).
      return r.length > 0 && r.every((x) => Date.parse(x.lastEvaluation) > Date.parse(targets[0]!.lastScrape)) ? r : undefined;
    }, 'every rule evaluated after a scrape', 30_000, 250);
    expect(rules).toHaveLength(loadRules().length);
    expect(rules.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.health} ${r.lastError ?? ''}`)).toEqual([]);
    // The agent is up, ready, syncing every 2 s: no alert of ours even pending, once the rules
    // have seen a scrape (WcfAgentAbsent is pending until then), and for three evaluations more.
    expect((await query(`wcf_agent_ready{instance="${instance}"}`)).result[0]?.value[1]).toBe('1');
    expect((await query(`wcf_agent_sync_interval_seconds{instance="${instance}"}`)).result[0]?.value[1]).toBe(String((MINUTE_MS * 1) / 1000));
    await waitFor(async () => (await alerts()).length === 0, 'no alert pending', 10_000, 250).catch(async (err: Error) => {
      throw new Error(`${err.message}: ${JSON.stringify(await alerts())}`);
    });
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, 1000));
      expect(await alerts()).toEqual([]);
    }
  }, 60_000);

  it('traffic and repairs show in the recording rules the dashboard reads', async () => {
    // Drops from the blocked peer, while Prometheus watches (a rate needs two samples).
    expect(await lab.connect(ADDR.blocked, 1500)).toBe('timeout');
    await waitFor(async () => Number((await query(`instance:wcf_agent_dropped_packets:rate5m{instance="${instance}", direction="in"}`)).result[0]?.value[1] ?? 0) > 0, 'a drop rate', 30_000, 500);
    // Another tool removes the agent's table until the watcher has put it back twice: the first
    // repair creates the counter's series, the second makes its increase visible. (A cycle that
    // starts in between puts the table back itself, uncounted: hence deleting again.) Two, not
    // more: WcfAgentRepairsRepeating fires past three.
    const repaired = () => daemon!.count(/removed by another tool were put back/);
    const removeUntil = (n: number) =>
      waitFor(async () => {
        if (repaired() >= n) return true;
        if ((await lab.host.exec('nft', ['list', 'tables'])).includes('inet wcf_agent')) await lab.host.exec('nft', ['delete', 'table', 'inet', 'wcf_agent']);
        return false;
      }, `${n} repairs by the watcher`, 60_000, 1500);
    await removeUntil(1);
    await waitFor(async () => (await query(`wcf_agent_repairs_total{instance="${instance}"}`)).result.length > 0, 'the first repair scraped', 20_000, 250);
    await removeUntil(2);
    await waitFor(async () => Number((await query(`instance:wcf_agent_repairs:increase1h{instance="${instance}"}`)).result[0]?.value[1] ?? 0) > 0, 'repairs in the last hour', 30_000, 500);
    await waitFor(async () => (await lab.host.exec('nft', ['list', 'tables'])).includes('inet wcf_agent'), 'the table back', 20_000, 200);
  }, 120_000);

  it('with the API stopped, "no successful sync" goes pending within seconds, and every dashboard query has data', async () => {
    await sim.close();
    const pending = await waitFor(async () => (await alerts()).find((a) => a.labels.alertname === 'WcfAgentNoSuccessfulSync'), 'WcfAgentNoSuccessfulSync', 60_000, 250);
    expect(pending).toMatchObject({ state: 'pending', labels: { job: 'wcf-agent', instance, severity: 'warning' } });
    // Seconds since the last success, more than three 2 s intervals.
    expect(Number(pending.value)).toBeGreaterThan(6);
    // Nothing else: the agent still answers, enforces, and was not refused.
    expect((await alerts()).map((a) => `${a.labels.alertname} ${a.state}`)).toEqual(['WcfAgentNoSuccessfulSync pending']);

    // The failed attempts are counted, so the API-errors query has data too.
    await waitFor(async () => (await query(`wcf_agent_api_errors_total{instance="${instance}", class="WCF_ERR_API_UNREACHABLE"} > 0`)).result.length > 0, 'failed API attempts scraped', 30_000, 250);
    await new Promise((r) => setTimeout(r, 2000)); // two more scrapes: a rate over them
    const results: { panel: string; refId: string; expr: string; result: Vector }[] = [];
    for (const q of dashboardQueries()) {
      const expr = withVariables(q.expr, { instance, rateInterval: '1m' });
      results.push({ ...q, expr, result: (await query(expr)).result });
    }
    expect(results.filter((r) => r.result.length === 0).map((r) => `${r.panel} ${r.refId}: ${r.expr}`)).toEqual([]);
    if (process.env.WCF_MONITORING_RESULTS) writeFileSync(process.env.WCF_MONITORING_RESULTS, JSON.stringify(results, null, 2));
  }, 120_000);
});

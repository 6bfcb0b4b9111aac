import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { CycleOutcome } from '../agent/cycle/types.js';
import type { RequestInfo } from '../api/client.js';
import type { Settings } from '../config/server.js';
import type { DropCounters } from '../firewall/index.js';
import { DOMAIN_SKIPS } from '../policy/domains.js';
import { SharedRead } from '../util/shared-read.js';

export const PREFIX = 'wcf_agent_';
const SKIP_REASONS = ['allowlist', 'whitelist', 'threshold', 'cap', 'too_wide'] as const;
const API_ERROR_CLASSES = ['WCF_ERR_API_UNREACHABLE', 'WCF_ERR_API_AUTH', 'WCF_ERR_API_STATUS', 'WCF_ERR_API_RESPONSE'] as const;
/**
 * A scrape reuses a counter read younger than this, or than the read took (the dropped_* metrics
 * share one read; scrapes in a burst share the one in flight).
 */
const COUNTER_READ_MIN_AGE_MS = 1000;
/**
 * A scrape waits this long for the counters, then answers with the last values; the read goes on
 * (shared by the next scrapes) until the backend's own limit ends its command (a few seconds).
 */
const COUNTER_WAIT_MS = 5000;

/** Drop counters per side (from the per-address hit counters) and how many distinct addresses each side holds. */
export interface SideCounters extends DropCounters {
  indicators: number;
}

/** The rule counters' total, and per side when the backend counts hits (every kernel backend does). */
export type CounterRead = DropCounters & { sides?: Record<'in' | 'out', SideCounters> };

export type CounterReader = () => Promise<CounterRead>;

/**
 * The agent's Prometheus metrics, in a Registry of their own (never the
 * global one). Values are pushed in by observe*() from the daemon, except the
 * dropped-packet counters, which are read from the kernel at scrape time.
 */
export class AgentMetrics {
  readonly registry = new Registry();
  private readCounters: CounterReader | undefined;
  private shared: SharedRead<CounterRead | undefined> | undefined;
  private last: CounterRead = { packets: 0, bytes: 0 };
  private onReadError: ((err: unknown) => void) | undefined;

  private readonly cycles = new Counter({ name: `${PREFIX}cycles_total`, help: 'Sync cycles by result', labelNames: ['result'], registers: [this.registry] });
  private readonly cycleDuration = new Histogram({
    name: `${PREFIX}cycle_duration_seconds`,
    help: 'Duration of a sync cycle (pull, select, apply, report)',
    buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [this.registry],
  });
  private readonly applied = new Gauge({ name: `${PREFIX}entries_applied`, help: 'Entries the last cycle applied, by reason (what the kernel still holds: wcf_agent_kernel_entries_missing, wcf_agent_ready)', labelNames: ['reason'], registers: [this.registry] });
  private readonly skipped = new Gauge({ name: `${PREFIX}entries_skipped`, help: 'Indicators left out by the last selection, by reason', labelNames: ['reason'], registers: [this.registry] });
  private readonly lastSuccess = new Gauge({ name: `${PREFIX}last_success_timestamp_seconds`, help: 'Epoch seconds of the last successful cycle (0 = none yet)', registers: [this.registry] });
  private readonly apiDuration = new Histogram({
    name: `${PREFIX}api_request_duration_seconds`,
    help: 'Duration of each API request attempt',
    labelNames: ['route', 'method'],
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  private readonly apiErrors = new Counter({ name: `${PREFIX}api_errors_total`, help: 'Failed API request attempts by error class', labelNames: ['class'], registers: [this.registry] });
  private readonly applyDuration = new Histogram({
    name: `${PREFIX}firewall_apply_duration_seconds`,
    help: 'Duration of each firewall apply (restore at start-up included)',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });
  private readonly countersOk: Gauge;
  private readonly domainsApplied = new Gauge({ name: `${PREFIX}domains_applied`, help: 'Names blocked at the resolver after the last cycle, by reason', labelNames: ['reason'], registers: [this.registry] });
  private readonly domainsSkipped = new Gauge({ name: `${PREFIX}domains_skipped`, help: 'Hosts of the URL feed left out by the last selection, by reason', labelNames: ['reason'], registers: [this.registry] });
  private readOverrides: (() => { allow: number; block: number }) | undefined;

  constructor(options: { defaultMetrics?: boolean } = {}) {
    const self = this;
    // Read from the overrides file at scrape time: `wcf-agent allow/block` change it without the daemon's help.
    new Gauge({
      name: `${PREFIX}local_overrides`,
      help: 'Active local overrides (wcf-agent allow / block), by action',
      labelNames: ['action'],
      registers: [this.registry],
      collect() {
        const n = self.overrideCounts();
        this.set({ action: 'allow' }, n.allow);
        this.set({ action: 'block' }, n.block);
      },
    });
    new Counter({
      name: `${PREFIX}dropped_packets_total`,
      help: "Packets dropped or rejected by the agent's rules, by direction (in: from listed addresses, out: to them; read from the kernel at scrape time)",
      labelNames: ['direction'],
      registers: [this.registry],
      async collect() {
        const c = await self.counters();
        this.reset();
        if (c.sides) for (const d of ['in', 'out'] as const) this.inc({ direction: d }, c.sides[d].packets);
        else this.inc(c.packets);
      },
    });
    new Counter({
      name: `${PREFIX}dropped_bytes_total`,
      help: "Bytes dropped or rejected by the agent's rules, by direction (read from the kernel at scrape time)",
      labelNames: ['direction'],
      registers: [this.registry],
      async collect() {
        const c = await self.counters();
        this.reset();
        if (c.sides) for (const d of ['in', 'out'] as const) this.inc({ direction: d }, c.sides[d].bytes);
        else this.inc(c.bytes);
      },
    });
    new Gauge({
      name: `${PREFIX}indicators_hit`,
      help: 'Distinct blocked addresses the kernel has counted hits for, by direction (no per-address label)',
      labelNames: ['direction'],
      registers: [this.registry],
      async collect() {
        const c = await self.counters();
        this.reset();
        if (c.sides) for (const d of ['in', 'out'] as const) this.set({ direction: d }, c.sides[d].indicators);
      },
    });
    // Collected after the same (shared) read as the two counters, so one scrape is consistent.
    this.countersOk = new Gauge({
      name: `${PREFIX}firewall_counters_read_ok`,
      help: '1 if the last read of the drop counters worked, else 0',
      registers: [this.registry],
      async collect() {
        await self.counters();
      },
    });
    new Gauge({
      name: `${PREFIX}ready`,
      help: '1 when the firewall enforces the last applied set (what /readyz answers 200 for), else 0',
      registers: [this.registry],
      async collect() {
        this.set((await self.readReady?.().catch(() => false)) ? 1 : 0);
      },
    });
    new Gauge({
      name: `${PREFIX}kernel_entries_missing`,
      help: "Applied entries the watcher's last look found missing from the kernel (another tool flushed or deleted them); 0 once repaired",
      registers: [this.registry],
      collect() {
        this.set(self.readTruth?.().missing ?? 0);
      },
    });
    new Gauge({
      name: `${PREFIX}kernel_checked_timestamp_seconds`,
      help: 'Epoch seconds of the last look (or apply) that found the kernel holding what the agent applied (0 = none yet)',
      registers: [this.registry],
      collect() {
        const at = self.readTruth?.().confirmedAt;
        this.set(at === undefined ? 0 : Math.floor(at / 1000));
      },
    });
    for (const result of ['ok', 'error']) this.cycles.inc({ result }, 0);
    for (const reason of ['manual', 'url', 'score']) this.applied.set({ reason }, 0);
    for (const reason of ['manual', 'score']) this.domainsApplied.set({ reason }, 0);
    for (const reason of DOMAIN_SKIPS) this.domainsSkipped.set({ reason }, 0);
    for (const reason of SKIP_REASONS) this.skipped.set({ reason }, 0);
    for (const c of API_ERROR_CLASSES) this.apiErrors.inc({ class: c }, 0);
    this.lastSuccess.set(0);
    this.countersOk.set(1);
    if (options.defaultMetrics ?? true) {
      collectDefaultMetrics({ register: this.registry, prefix: PREFIX });
      // prom-client's process_heap_bytes is VmData from /proc/self/status: address space
      // reserved for private data (V8 reserves its heap cage and every thread's arena up
      // front), not memory in use; it read 702 MB beside an RSS of 188 MB. Memory in use is
      // process_resident_memory_bytes; the JS heap is nodejs_heap_size_used_bytes.
      this.registry.removeSingleMetric(`${PREFIX}process_heap_bytes`);
    }
  }

  /** Where the dropped_* counters come from (changes on reload); errors go to `onError`, never to the scrape. */
  setCounterReader(reader: CounterReader | undefined, onError?: (err: unknown) => void): void {
    this.readCounters = reader;
    this.onReadError = onError;
    this.shared = new SharedRead(
      () =>
        reader
          ? reader().then(
              (c) => {
                this.countersOk.set(1);
                return c;
              },
              (err: unknown) => {
                this.countersOk.set(0);
                this.onReadError?.(err);
                return undefined;
              },
            )
          : Promise.resolve({ packets: 0, bytes: 0 }),
      (ms) => Math.max(COUNTER_READ_MIN_AGE_MS, ms),
    );
  }

  private async counters(): Promise<CounterRead> {
    if (!this.shared) return this.last;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => {
        this.countersOk.set(0);
        this.onReadError?.(new Error(`reading the drop counters took more than ${COUNTER_WAIT_MS} ms`));
        resolve(undefined);
      }, COUNTER_WAIT_MS);
    });
    const c = await Promise.race([this.shared.get(), late]).finally(() => clearTimeout(timer));
    if (c) this.last = c;
    return this.last;
  }

  /** Where the active local overrides are counted from (the daemon's state dir). */
  setOverridesReader(read: () => { allow: number; block: number }): void {
    this.readOverrides = read;
  }

  private overrideCounts(): { allow: number; block: number } {
    try {
      return this.readOverrides?.() ?? { allow: 0, block: 0 };
    } catch {
      return { allow: 0, block: 0 }; // an unreadable file is reported by the cycle that fails on it
    }
  }

  observeCycle(outcome: CycleOutcome): void {
    const r = outcome.record;
    this.cycles.inc({ result: r.ok ? 'ok' : 'error' });
    this.cycleDuration.observe(r.durationMs / 1000);
    for (const [reason, n] of Object.entries(r.byReason)) this.applied.set({ reason }, n);
    // A failed pull has no selection: keep the last one's numbers.
    if (outcome.plan) for (const reason of SKIP_REASONS) this.skipped.set({ reason }, r.skipped[reason] ?? 0);
    if (outcome.dns) for (const [reason, n] of Object.entries(outcome.dns.byReason)) this.domainsApplied.set({ reason }, n);
    const dnsPlan = outcome.plan?.dns;
    if (dnsPlan) for (const reason of DOMAIN_SKIPS) this.domainsSkipped.set({ reason }, dnsPlan.selection.skipped[reason]);
    if (r.ok) this.setLastSuccess(r.ts);
    this.lastCycleCode.set(r.code);
    this.observeSettings(outcome.settings);
    if (outcome.stateReport) {
      this.reportEntries.set(outcome.stateReport.entries);
      this.reportShortened.set(outcome.stateReport.shortened ? 1 : 0);
    }
  }

  private readonly reportEntries = new Gauge({ name: `${PREFIX}report_entries`, help: 'Applied entries listed in the last state report (bounded by report_max_kb)', registers: [this.registry] });
  private readonly reportShortened = new Gauge({ name: `${PREFIX}report_shortened`, help: '1 when the last state report listed fewer entries than applied (report_max_kb, or a 413 from the server)', registers: [this.registry] });
  private readonly notModified = new Counter({ name: `${PREFIX}api_not_modified_total`, help: 'API answers 304 Not Modified (a conditional request found nothing changed), by route', labelNames: ['route'], registers: [this.registry] });

  // What alerting rules compare with: the cap, the interval a sync is due in, and the last cycle's code.
  private readonly maximumRules = new Gauge({ name: `${PREFIX}maximum_rules`, help: 'maximum_rules in force (the cap on entries applied)', registers: [this.registry] });
  private readonly syncInterval = new Gauge({ name: `${PREFIX}sync_interval_seconds`, help: 'sync_time in force, in seconds: a successful cycle is due this often (jitter aside)', registers: [this.registry] });
  private readonly lastCycleCode = new Gauge({ name: `${PREFIX}last_cycle_code`, help: 'Reported code of the last cycle (0 = success; the table in docs/commands.md, e.g. 21 token refused, 31 resolver failed)', registers: [this.registry] });
  private readonly apiSent = new Counter({ name: `${PREFIX}api_sent_bytes_total`, help: 'Request body bytes sent to the API (gzip-encoded where they were), by route', labelNames: ['route'], registers: [this.registry] });
  private readonly apiReceived = new Counter({ name: `${PREFIX}api_received_bytes_total`, help: 'Answer body bytes received from the API (as they came: gzip-encoded where they were), by route', labelNames: ['route'], registers: [this.registry] });
  private readReady: (() => Promise<boolean>) | undefined;
  /** The daemon's minute in milliseconds, the unit of sync_time (tests shorten it). */
  private minuteMs = 60_000;

  setLastSuccess(epochSeconds: number | undefined): void {
    if (epochSeconds !== undefined) this.lastSuccess.set(epochSeconds);
  }

  /** The settings in force; `minuteMs` is the daemon's minute (shortened in tests). */
  observeSettings(settings: Pick<Settings, 'maximum_rules' | 'sync_time'>, minuteMs = this.minuteMs): void {
    this.minuteMs = minuteMs;
    this.maximumRules.set(settings.maximum_rules);
    this.syncInterval.set((settings.sync_time * minuteMs) / 1000);
  }

  /** The last cycle's reported code, as the state file kept it (a restarted daemon has not cycled yet). */
  setLastCycleCode(code: number | undefined): void {
    if (code !== undefined) this.lastCycleCode.set(code);
  }

  /** Where `wcf_agent_ready` comes from: the daemon's /readyz answer, asked at scrape time. */
  setReadiness(read: () => Promise<boolean>): void {
    this.readReady = read;
  }

  /** Where the kernel_* gauges come from: what the daemon's watcher last found (no kernel read at scrape time). */
  setTruth(read: () => { missing: number; confirmedAt?: number }): void {
    this.readTruth = read;
  }
  private readTruth: (() => { missing: number; confirmedAt?: number }) | undefined;

  /** ApiClient observer: one call per attempt. */
  readonly observeRequest = (info: RequestInfo): void => {
    this.apiDuration.observe({ route: info.route, method: info.method }, info.durationMs / 1000);
    if (info.errorCode) this.apiErrors.inc({ class: info.errorCode });
    if (info.status === 304) this.notModified.inc({ route: info.route });
    this.apiSent.inc({ route: info.route }, info.sentBytes);
    this.apiReceived.inc({ route: info.route }, info.receivedBytes);
  };

  observeApply(seconds: number): void {
    this.applyDuration.observe(seconds);
  }

  private readonly repairs = new Counter({
    name: `${PREFIX}repairs_total`,
    help: 'Objects the watcher put back between cycles after another tool removed them, by object',
    labelNames: ['object'],
    registers: [this.registry],
  });

  /** One repair by the watcher: each object it found missing counts once. */
  observeRepair(objects: readonly string[]): void {
    // Digits out of the label (a repair may say "3 foreign entries"): one series per kind of object, not per count.
    for (const object of objects) this.repairs.inc({ object: object.replace(/\d+/g, 'N') });
  }
}

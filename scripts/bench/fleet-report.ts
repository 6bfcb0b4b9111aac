/** The fleet benchmark's rows in the results table, and its targets. */
import type { FleetResult, HostDayFigure } from './fleet.js';
import { sizeLabel } from './stats.js';

const mb = (b: number) => `${(b / 1e6).toFixed(1)} MB`;

function dayLabel(d: HostDayFigure): string {
  return `bytes per host per day, ${d.churn ? '1%/h changing' : 'idle'}, sync_time ${d.syncMinutes} min, validators ${d.conditional}${d.gzip ? ', gzip' : ''}`;
}

function kinds(d: HostDayFigure): string {
  return Object.entries(d.byKind)
    .sort((a, b) => b[1].bytes - a[1].bytes)
    .map(([k, v]) => `${k} ${mb(v.bytes)} (${v.calls} calls)`)
    .join(', ');
}

export function fleetRows(fleet: readonly FleetResult[]): string[][] {
  const rows: string[][] = [];
  for (const f of fleet) {
    for (const d of f.days) rows.push([dayLabel(d), sizeLabel(d.size), mb(d.bytesPerDay), '', `${d.requestsPerDay} calls, ${d.applied} applied; ${kinds(d)}`]);
    const s = f.steady;
    rows.push([`fleet of ${f.hosts}, steady state`, '', `${s.meanRequestsPerSecond.toFixed(1)} req/s`, '', `busiest second ${s.busiestRequests} requests, ${s.busiestHosts} hosts calling, ${s.busiestSyncs} starting a sync (over ${s.seconds} s)`]);
    for (const r of f.restarts) {
      rows.push([
        `fleet of ${f.hosts}, all restarted in one second, startup_delay_seconds ${r.startupDelaySeconds}`,
        '',
        `${((100 * r.busiestSyncs) / f.hosts).toFixed(1)}% of hosts`,
        '',
        `busiest second: ${r.busiestSyncs} hosts starting a sync, ${r.busiestHosts} calling, ${r.busiestRequests} requests; ${r.meanRequestsPerSecond.toFixed(1)} req/s over 5 min; every host synced after ${r.allSyncedAfter} s`,
      ]);
    }
  }
  return rows;
}

export function fleetTargets(fleet: readonly FleetResult[]): { what: string; limit: string; measured: string; met: boolean }[] {
  const out: { what: string; limit: string; measured: string; met: boolean }[] = [];
  for (const f of fleet) {
    for (const d of f.days.filter((x) => x.size === 10_000 && !x.churn)) {
      out.push({ what: `idle host, 10k, 1,000 manual blocks, sync_time ${d.syncMinutes}, validators ${d.conditional}${d.gzip ? ', gzip' : ''}`, limit: '<= 25 MB/day', measured: mb(d.bytesPerDay), met: d.bytesPerDay <= 25e6 });
    }
    for (const r of f.restarts) {
      out.push({ what: `busiest second after a simultaneous restart of ${f.hosts} (startup_delay_seconds ${r.startupDelaySeconds})`, limit: '<= 5% of the fleet', measured: `${((100 * r.busiestSyncs) / f.hosts).toFixed(1)}%`, met: r.busiestSyncs <= 0.05 * f.hosts });
    }
  }
  return out;
}

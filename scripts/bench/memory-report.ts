/** Rows, targets and charts for the daemon's memory, idle CPU and the peer comparison. */
import { barChart, formatMs } from './chart.js';
import type { DaemonFigure, IdleFigure } from './daemon.js';
import type { PeerFigure } from './peers.js';
import { sizeLabel } from './stats.js';

export interface MemTarget {
  what: string;
  limit: string;
  measured: string;
  met: boolean;
}

const mb = (v: number) => `${v.toFixed(0)} MB`;

export function memoryRows(daemon: DaemonFigure[], idle: IdleFigure[], peers: PeerFigure[]): string[][] {
  const rows: string[][] = [];
  for (const f of daemon) {
    const m = f.median;
    rows.push([
      `daemon (${f.agent}${f.https ? ', https API' : ''}) ${f.plugin}${f.allSelected ? ', all selected' : ''}: first cycle`,
      sizeLabel(f.size),
      formatMs(m.firstCycleMs),
      mb(m.peakMB),
      `${m.applied} applied; held between cycles ${mb(m.heldMaxMB)} at most, ${mb(m.heldLastMB)} after cycle ${f.cycles}`,
    ]);
  }
  for (const i of idle) rows.push([`daemon (${i.agent}) idle CPU over ${i.minutes} min`, sizeLabel(i.size), `${i.cpuSeconds.toFixed(2)} CPU s`, mb(i.rssMB), 'utime + stime between two cycles']);
  for (const p of peers) rows.push([`peer ${p.peer}: until all in the kernel set`, sizeLabel(p.size), formatMs(p.median.readyMs), mb(p.median.peakMB), `${p.version}; nftables, own namespace`]);
  return rows;
}

export function memoryTargets(daemon: DaemonFigure[]): MemTarget[] {
  const out: MemTarget[] = [];
  const pick = (size: number, allSelected: boolean) => daemon.filter((f) => f.size === size && f.allSelected === allSelected);
  const api = (f: DaemonFigure) => (f.https ? ' (https API)' : '');
  for (const f of pick(10_000, false)) {
    out.push({ what: `daemon 10k ${f.plugin}${api(f)}: RSS after ${f.cycles} cycles`, limit: '<= 72 MB', measured: mb(f.median.heldLastMB), met: f.median.heldLastMB <= 72 });
    out.push({ what: `daemon 10k ${f.plugin}${api(f)}: peak RSS`, limit: '<= 90 MB', measured: mb(f.median.peakMB), met: f.median.peakMB <= 90 });
  }
  for (const f of pick(100_000, false)) out.push({ what: `daemon 100k ${f.plugin}${api(f)}: peak RSS over ${f.cycles} cycles, the first a full sync`, limit: '<= 132 MB', measured: mb(f.median.peakMB), met: f.median.peakMB <= 132 });
  for (const f of pick(1_000_000, true)) {
    out.push({ what: `daemon 1M all selected ${f.plugin}${api(f)}: peak RSS`, limit: '<= 400 MB', measured: mb(f.median.peakMB), met: f.median.peakMB <= 400 });
    out.push({ what: `daemon 1M all selected ${f.plugin}${api(f)}: held between cycles`, limit: '<= 200 MB', measured: mb(f.median.heldMaxMB), met: f.median.heldMaxMB <= 200 });
  }
  return out;
}

/** Peak RSS and time until enforced, both peers side by side; undefined without peer figures. */
export function peerCharts(peers: PeerFigure[], runs: number): { rss: string; time: string } | undefined {
  if (!peers.length) return undefined;
  const sizes = [...new Set(peers.map((p) => p.size))].sort((a, b) => a - b);
  const value = (peer: PeerFigure['peer'], v: (p: PeerFigure) => number) => sizes.map((n) => {
    const p = peers.find((x) => x.size === n && x.peer === peer);
    return p && v(p);
  });
  const subtitle = `${runs} run(s) each, median; nftables, each enforcer in its own network namespace, the same entries`;
  const series = (v: (p: PeerFigure) => number) => [
    { name: `wcf-agent run (${peers.find((p) => p.peer === 'wcf-agent')?.version ?? ''})`, color: '#1f77b4', values: value('wcf-agent', v) },
    { name: `CrowdSec bouncer (${peers.find((p) => p.peer === 'crowdsec')?.version.replace(/^crowdsec \S+, crowdsec-firewall-bouncer /, '') ?? ''})`, color: '#d62728', values: value('crowdsec', v) },
  ];
  return {
    rss: barChart({ title: 'Peak RSS of the enforcing process', subtitle, xLabel: 'entries', yLabel: 'peak RSS (VmHWM), MB', groups: sizes.map(sizeLabel), log: false, format: mb, series: series((p) => p.median.peakMB) }),
    time: barChart({ title: 'Process start until every entry is in the kernel set', subtitle, xLabel: 'entries', yLabel: 'time', groups: sizes.map(sizeLabel), log: true, format: formatMs, series: series((p) => p.median.readyMs) }),
  };
}

/** Peak and held RSS of the daemon per size and backend. */
export function daemonChart(daemon: DaemonFigure[], runs: number): string | undefined {
  if (!daemon.length) return undefined;
  const keys = [...new Set(daemon.map((f) => `${sizeLabel(f.size)}${f.allSelected ? ' all sel.' : ''}`))];
  const label = (f: DaemonFigure) => `${sizeLabel(f.size)}${f.allSelected ? ' all sel.' : ''}`;
  const values = (plugin: string, v: (f: DaemonFigure) => number) => keys.map((k) => {
    const f = daemon.find((x) => label(x) === k && x.plugin === plugin);
    return f && v(f);
  });
  return barChart({
    title: 'wcf-agent run: resident memory (median)',
    subtitle: `${runs} run(s) each; peak = VmHWM over ${daemon[0]!.cycles} cycles, held = VmRSS half-way between cycles (largest)`,
    xLabel: 'indicators in the feed',
    yLabel: 'MB',
    groups: keys,
    log: false,
    format: mb,
    series: [
      { name: 'nftables: peak', color: '#9467bd', values: values('nftables', (f) => f.median.peakMB) },
      { name: 'nftables: held between cycles', color: '#c5b0d5', values: values('nftables', (f) => f.median.heldMaxMB) },
      { name: 'ipset: peak', color: '#2ca02c', values: values('ipset', (f) => f.median.peakMB) },
      { name: 'ipset: held between cycles', color: '#98df8a', values: values('ipset', (f) => f.median.heldMaxMB) },
    ],
  });
}

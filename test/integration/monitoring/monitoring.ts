import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import { parse } from 'yaml';
import { ROOT } from '../../helpers/cli.js';

/**
 * The monitoring files a platform team loads (deploy/prometheus/, deploy/grafana/), read
 * the way Prometheus and Grafana read them, and the PromQL inside them parsed with
 * Prometheus's own grammar (@prometheus-io/lezer-promql, what its web UI uses).
 */

export const RULES_DIR = join(ROOT, 'deploy', 'prometheus');
export const RULES_FILE = join(RULES_DIR, 'wcf-agent.rules.yml');
export const RULES_TEST_FILE = join(RULES_DIR, 'wcf-agent.rules.test.yml');
export const DASHBOARD_FILE = join(ROOT, 'deploy', 'grafana', 'wcf-agent-fleet.json');
export const MONITORING_DOC = join(ROOT, 'docs', 'monitoring.md');

export interface Rule {
  record?: string;
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export function loadRules(text = readFileSync(RULES_FILE, 'utf8')): Rule[] {
  return (parse(text) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);
}

export interface PanelQuery {
  panel: string;
  refId: string;
  expr: string;
}

/** Every query of every panel (rows included), and of the template variables. */
export function dashboardQueries(dashboard = loadDashboard()): PanelQuery[] {
  const out: PanelQuery[] = [];
  const walk = (panels: Panel[]) => {
    for (const p of panels) {
      for (const t of p.targets ?? []) out.push({ panel: p.title, refId: t.refId, expr: t.expr });
      walk(p.panels ?? []);
    }
  };
  walk(dashboard.panels);
  return out;
}

// The shape the tests read; the whole file is checked against Grafana's own types elsewhere.
export interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource?: { type: string; uid: string };
  targets?: { refId: string; expr: string; datasource?: { type: string; uid: string } }[];
  panels?: Panel[];
}
export interface Dashboard {
  uid: string;
  schemaVersion: number;
  panels: Panel[];
  templating: { list: { name: string; type: string; definition?: string; query?: unknown }[] };
  __requires: { type: string; id: string; version: string }[];
}

export function loadDashboard(): Dashboard {
  return JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as Dashboard;
}

/**
 * The series names an expression selects (`wcf_agent_x`, `job:y:sum`, `up`), or the
 * syntax errors Prometheus's grammar finds in it. Grafana's variables are put in first,
 * with the values Grafana would give them.
 */
export function selectedNames(expr: string): { names: string[]; errors: string[] } {
  const text = withVariables(expr, { instance: '.+', rateInterval: '1m' });
  const names = new Set<string>();
  const errors: string[] = [];
  parser.parse(text).iterate({
    enter(node) {
      if (node.type.isError) errors.push(`syntax error at ${node.from}: ${JSON.stringify(text.slice(Math.max(0, node.from - 10), node.to + 10))}`);
      if (node.name === 'Identifier' && node.node.parent?.name === 'VectorSelector') names.add(text.slice(node.from, node.to));
    },
  });
  return { names: [...names].sort(), errors };
}

/** Grafana's `$instance` and `$__rate_interval` replaced as Grafana would before it sends the query. */
export function withVariables(expr: string, v: { instance: string; rateInterval: string }): string {
  return expr.replaceAll('$__rate_interval', v.rateInterval).replaceAll('$instance', v.instance);
}

/** Series Prometheus makes itself: a target's `up`, and `ALERTS` once rules are loaded. */
export const PROMETHEUS_OWN = new Set(['up', 'ALERTS']);

/**
 * The metric names a `/metrics` page declares (its `# TYPE` lines), with the series a
 * histogram or summary expands to: what a selector may name.
 */
export function exposedNames(exposition: string): Set<string> {
  const out = new Set<string>();
  for (const m of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = m as unknown as [string, string, string];
    out.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) out.add(name + s);
    if (type === 'summary') for (const s of ['_sum', '_count']) out.add(name + s);
  }
  return out;
}

/** GitHub's anchor for a Markdown heading (lower case, punctuation out, spaces to dashes). */
export function headingAnchors(markdown: string): Set<string> {
  const out = new Set<string>();
  for (const m of markdown.matchAll(/^#{1,6} (.+)$/gm)) out.add(m[1]!.trim().toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-'));
  return out;
}

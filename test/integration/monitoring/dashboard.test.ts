import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { typeErrors } from '../../helpers/tsc-check.js';
import { DASHBOARD_FILE, dashboardQueries, loadDashboard, loadRules, PROMETHEUS_OWN, selectedNames, type Panel } from './monitoring.js';

/**
 * deploy/grafana/wcf-agent-fleet.json: a dashboard Grafana 10 imports. Grafana is not
 * packaged for Debian, so it cannot run here; the file is checked against Grafana 10.0's
 * own dashboard types (@grafana/schema 10.0, generated from the CUE schema Grafana
 * validates with) and for what an import needs. That every metric it names exists on a
 * running daemon, and that every query returns data from a real Prometheus, is in
 * prometheus.test.ts.
 */

/**
 * Grafana's generated types, loosened where they are stricter than Grafana itself: enum
 * types as their values (JSON has no enums), fields with a schema default optional (the
 * import fills them in), and the base threshold's `null` (how Grafana writes -Infinity).
 * Field names stay exact: a name the schema lacks is an error.
 */
const LOOSE = 'type Loose<T> = T extends { color: string; value: number } ? { color: string; value: number | null } : T extends string ? `${T}` : T extends number ? number : T extends boolean ? boolean : T extends readonly (infer U)[] ? Loose<U>[] : T extends object ? { [K in keyof T]?: Loose<T[K]> } : T;';
const asGrafanaType = (json: string) => `import type { Dashboard } from '@grafana/schema';\n${LOOSE}\nexport const d: Loose<Dashboard> & { __inputs?: unknown; __requires?: unknown } = ${json};\n`;

const dashboard = loadDashboard();
const all = (panels: Panel[]): Panel[] => panels.flatMap((p) => [p, ...all(p.panels ?? [])]);
const panels = all(dashboard.panels);
const recorded = new Set(loadRules().flatMap((r) => (r.record ? [r.record] : [])));

describe('the Grafana dashboard', () => {
  it("matches Grafana 10.0's dashboard types, and the check catches a misspelled field", async () => {
    const text = readFileSync(DASHBOARD_FILE, 'utf8');
    const [good, bad] = await typeErrors([asGrafanaType(text), asGrafanaType(text.replace('"gridPos"', '"gridPosition"'))], 'grafana');
    expect(good).toEqual([]);
    expect(bad!.join('\n')).toMatch(/gridPosition/);
  }, 120_000);

  it('is importable: a uid, Grafana 10.0 as its requirement, a Prometheus data source chosen at import', () => {
    expect(dashboard.uid).toMatch(/^[\w-]{8,40}$/);
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    expect(dashboard.schemaVersion).toBeLessThanOrEqual(38); // what Grafana 10.0 writes; newer ones migrate it
    expect(dashboard.__requires).toContainEqual(expect.objectContaining({ type: 'grafana', id: 'grafana', version: '10.0.0' }));
    expect(dashboard.templating.list.find((v) => v.name === 'datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
    // Only panel types built into Grafana 10: nothing to install.
    for (const p of panels) expect(['row', 'stat', 'bargauge', 'timeseries'], p.title).toContain(p.type);
  });

  it('lays every panel out on the 24-column grid, no two overlapping, each with its own id', () => {
    expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
    for (const p of panels) expect(p.gridPos.x + p.gridPos.w, p.title).toBeLessThanOrEqual(24);
    const cells = new Map<string, string>();
    for (const p of panels)
      for (let x = p.gridPos.x; x < p.gridPos.x + p.gridPos.w; x++)
        for (let y = p.gridPos.y; y < p.gridPos.y + p.gridPos.h; y++) {
          const key = `${x},${y}`;
          expect(cells.get(key), `${p.title} overlaps`).toBeUndefined();
          cells.set(key, p.title);
        }
  });

  it('has the fleet overview and one host\'s drill-down the issue lists', () => {
    const titles = panels.map((p) => p.title);
    for (const t of ['Hosts reporting', 'Last successful sync, by host', 'Applied / maximum_rules, by host', 'Dropped packets/s', 'API bytes/s', 'Repairs in the last hour, by host', 'Cycle time', 'Host: $instance']) {
      expect(titles).toContain(t);
    }
    // Every panel below the host's row reads that host only.
    const hostRow = panels.find((p) => p.type === 'row' && p.title === 'Host: $instance')!;
    const drill = panels.filter((p) => p.type !== 'row' && p.gridPos.y > hostRow.gridPos.y);
    expect(drill.length).toBeGreaterThan(5);
    for (const p of drill) for (const t of p.targets!) expect(t.expr, p.title).toMatch(/instance=~"\$instance"/);
  });

  it("queries its data source in PromQL Prometheus's grammar accepts, naming only the agent's metrics, the rules' records and Prometheus's own series", () => {
    const queries = dashboardQueries();
    expect(queries.length).toBeGreaterThan(20);
    for (const p of panels.filter((x) => x.type !== 'row')) {
      expect(p.datasource, p.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
      for (const t of p.targets!) expect(t.datasource, p.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
    }
    for (const q of queries) {
      const { names, errors } = selectedNames(q.expr);
      expect(errors, `${q.panel}: ${q.expr}`).toEqual([]);
      expect(names.length, q.expr).toBeGreaterThan(0);
      for (const n of names) expect(n.startsWith('wcf_agent_') || recorded.has(n) || PROMETHEUS_OWN.has(n), `${q.panel}: ${n}`).toBe(true);
      for (const m of q.expr.matchAll(/\b(?:wcf_agent_\w+|up)\{([^}]*)\}/g)) expect(m[1], `${q.panel}: ${m[0]}`).toContain('job="wcf-agent"');
    }
    // The check can fail.
    expect(selectedNames('sum(rate(wcf_agent_x[5m])').errors).not.toEqual([]);
  });
});

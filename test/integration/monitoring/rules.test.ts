import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { headingAnchors, loadRules, MONITORING_DOC, RULES_FILE, RULES_TEST_FILE, selectedNames } from './monitoring.js';

/**
 * deploy/prometheus/: the rules pass `promtool check rules`, their unit tests pass
 * `promtool test rules` (Debian's prometheus package), every alert is shown there both
 * firing and silent, and those tests fail when an alert is broken.
 */

const promtool = (args: string[], cwd: string) => execa('promtool', args, { cwd, reject: false, env: { LC_ALL: 'C' } });
const rules = loadRules();
const alerts = rules.filter((r) => r.alert);
const records = rules.filter((r) => r.record);

interface AlertCase {
  alertname: string;
  exp_alerts: unknown[];
}
const tests = (parse(readFileSync(RULES_TEST_FILE, 'utf8')) as { tests: { alert_rule_test?: AlertCase[]; promql_expr_test?: { expr: string }[] }[] }).tests;

const scratch = mkdtempSync(join(tmpdir(), 'wcf-promtool-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** `promtool test rules` on the test file against `rulesText` in place of the real rules. */
async function testAgainst(rulesText: string) {
  const dir = mkdtempSync(join(scratch, 'm-'));
  writeFileSync(join(dir, 'wcf-agent.rules.yml'), rulesText);
  copyFileSync(RULES_TEST_FILE, join(dir, 'wcf-agent.rules.test.yml'));
  return promtool(['test', 'rules', 'wcf-agent.rules.test.yml'], dir);
}

/** The rules file with one alert changed by `change`. */
function mutated(alert: string, change: (rule: Record<string, unknown>) => void): string {
  const doc = parse(readFileSync(RULES_FILE, 'utf8')) as { groups: { rules: Record<string, unknown>[] }[] };
  const rule = doc.groups.flatMap((g) => g.rules).find((r) => r.alert === alert)!;
  change(rule);
  return stringify(doc);
}

describe('the Prometheus rules', () => {
  it('promtool check rules accepts every rule', async () => {
    const r = await promtool(['check', 'rules', RULES_FILE], process.cwd());
    expect(r.exitCode, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toContain(`SUCCESS: ${rules.length} rules found`);
    // The alerts the dashboard and the runbooks expect, no more, no fewer.
    expect(alerts.map((a) => a.alert).sort()).toEqual([
      'WcfAgentAbsent', 'WcfAgentDown', 'WcfAgentNearMaximumRules', 'WcfAgentNoSuccessfulSync', 'WcfAgentNotReady',
      'WcfAgentRepairsRepeating', 'WcfAgentReportShortened', 'WcfAgentResolverFailing', 'WcfAgentTokenRefused', 'WcfAgentUnknownToApi',
    ]);
  });

  it('promtool test rules passes', async () => {
    const r = await promtool(['test', 'rules', 'wcf-agent.rules.test.yml'], join(RULES_FILE, '..'));
    expect(r.exitCode, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/SUCCESS/);
  });

  it('the tests show every alert firing and every alert silent, and evaluate every recording rule', () => {
    const cases = tests.flatMap((t) => t.alert_rule_test ?? []);
    for (const a of alerts) {
      const mine = cases.filter((c) => c.alertname === a.alert);
      expect(mine.some((c) => c.exp_alerts.length > 0), `${a.alert} firing`).toBe(true);
      expect(mine.some((c) => c.exp_alerts.length === 0), `${a.alert} silent`).toBe(true);
    }
    const evaluated = new Set(tests.flatMap((t) => t.promql_expr_test ?? []).map((t) => t.expr));
    for (const r of records) expect(evaluated.has(r.record!), r.record).toBe(true);
  });

  it('every alert has a severity, a summary, a description and a runbook section in docs/monitoring.md', () => {
    const anchors = headingAnchors(readFileSync(MONITORING_DOC, 'utf8'));
    for (const a of alerts) {
      expect(['critical', 'warning', 'info'], a.alert).toContain(a.labels?.severity);
      expect(a.annotations?.summary, a.alert).toBeTruthy();
      expect(a.annotations?.description, a.alert).toBeTruthy();
      const runbook = /^docs\/monitoring\.md#(.+)$/.exec(a.annotations?.runbook ?? '');
      expect(runbook, `${a.alert} runbook`).not.toBeNull();
      expect(anchors.has(runbook![1]!), `${a.alert}: no heading for #${runbook![1]} in docs/monitoring.md`).toBe(true);
    }
  });

  it("every rule selects the agent's job only, in PromQL Prometheus's own grammar accepts", () => {
    for (const r of rules) {
      const { errors } = selectedNames(r.expr);
      expect(errors, r.alert ?? r.record).toEqual([]);
      for (const m of r.expr.matchAll(/\b(?:wcf_agent_\w+|up)\{([^}]*)\}/g)) expect(m[1], `${r.alert ?? r.record}: ${m[0]}`).toContain('job="wcf-agent"');
    }
  });

  describe('the tests fail when an alert is broken', () => {
    it.each(alerts.map((a) => a.alert!))('%s that never fires', async (name) => {
      const r = await testAgainst(mutated(name, (rule) => (rule.expr = 'vector(1) == 0')));
      expect(r.exitCode).not.toBe(0);
      expect(r.stderr).toContain(`alertname: ${name},`);
    });

    it.each(alerts.filter((a) => a.for).map((a) => a.alert!))('%s without its `for`, firing at once', async (name) => {
      const r = await testAgainst(mutated(name, (rule) => delete rule.for));
      expect(r.exitCode).not.toBe(0);
      expect(r.stderr).toContain(`alertname: ${name},`);
    });
  });
});

/** One line of `wcf-agent doctor`. */

export type CheckStatus = 'ok' | 'warn' | 'fail';
/** What a failure is about; it picks doctor's exit code (the agent's own codes: config 2, API 3, firewall/state 4, else 1). */
export type CheckKind = 'config' | 'api' | 'firewall' | 'state' | 'other';

export interface CheckResult {
  name: string;
  status: CheckStatus;
  message: string;
  hint: string | null;
  kind: CheckKind;
}

export function check(kind: CheckKind, name: string, status: CheckStatus, message: string, hint?: string): CheckResult {
  return { name, status, message, hint: hint ?? null, kind };
}

const EXIT_BY_KIND: Record<CheckKind, number> = { config: 2, api: 3, firewall: 4, state: 4, other: 1 };
const PRECEDENCE: readonly CheckKind[] = ['config', 'api', 'firewall', 'state', 'other'];

/** 0 when nothing failed; else the code of the most basic failure (config before API before firewall). */
export function doctorExitCode(results: readonly CheckResult[]): number {
  const failed = new Set(results.filter((r) => r.status === 'fail').map((r) => r.kind));
  for (const kind of PRECEDENCE) if (failed.has(kind)) return EXIT_BY_KIND[kind];
  return 0;
}

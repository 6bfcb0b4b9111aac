// No imports: this module is loaded by the entry before anything else, on whatever Node
// runs it, and must work on an old one.

/**
 * The oldest Node the agent runs on: its HTTP client takes proxies from Node's own http/https
 * Agents (`proxyEnv`), which came in 24.5; an older Node would ignore the option and connect
 * around the proxy. package.json engines says the same.
 */
export const MINIMUM_NODE = '24.5.0';

function parts(v: string): number[] {
  return v.replace(/^v/, '').split('.').map((n) => Number.parseInt(n, 10) || 0);
}

/** Whether version `found` is at least `minimum` (both `X.Y.Z`, an optional leading `v`). */
export function atLeast(found: string, minimum: string): boolean {
  const f = parts(found);
  const m = parts(minimum);
  for (let i = 0; i < 3; i++) {
    if ((f[i] ?? 0) !== (m[i] ?? 0)) return (f[i] ?? 0) > (m[i] ?? 0);
  }
  return true;
}

/**
 * One line for an operator who started the CLI with a Node too old for it (the system
 * Node of a distribution, typically): which Node was found, which is needed, and commands
 * that work. Undefined when the Node is recent enough.
 */
export function nodeVersionProblem(found: string, execPath: string): string | undefined {
  if (atLeast(found, MINIMUM_NODE)) return undefined;
  return (
    `wcf-agent: needs Node.js ${MINIMUM_NODE} or later, found ${found.replace(/^v?/, 'v')} (${execPath}); ` +
    `in a checkout run npx wcf-agent or node_modules/.bin/node dist/cli.js (npm ci installs Node 24 there), or use the single binary`
  );
}

import { CommandFailure, createCommandRunner } from '../../exec/runner.js';
import { createRunner, probeTools, TOOLS } from '../../firewall/index.js';
import { AGENT_VERSION, BUILD_COMMIT, versionLine } from '../../version.js';
import { printJson } from '../format.js';

/**
 * The resolver tools the URL feed's backends may run, each with how to ask its version (they do
 * not agree on a flag) and where the version is in the answer.
 */
const RESOLVER_TOOLS: readonly { tool: string; args: string[]; version: RegExp }[] = [
  { tool: 'unbound-control', args: ['-h'], version: /Version (\S+)/ },
  { tool: 'rndc', args: [], version: /Version: (\S+)/ },
  { tool: 'rec_control', args: ['--version'], version: /version (\S+)/ },
  { tool: 'kresd', args: ['--version'], version: /version (\S+)/ },
  { tool: 'dnsmasq', args: ['--version'], version: /version (\S+)/ },
];

/** The resolver tools found on PATH and their versions (null: not found). Some print their version with a non-zero exit. */
async function resolverTools(): Promise<Record<string, string | null>> {
  const runner = createCommandRunner({ timeoutMs: 5000, maxBuffer: 64 * 1024, fail: ({ cause }) => (cause instanceof Error ? cause : new Error(String(cause))) });
  const found = await Promise.all(
    RESOLVER_TOOLS.map(async ({ tool, args, version }) => {
      let text: string;
      try {
        const r = await runner.run(tool, args);
        text = `${r.stdout}\n${r.stderr}`;
      } catch (err) {
        text = err instanceof CommandFailure ? `${err.stdout}\n${err.stderr}` : '';
      }
      return [tool, version.exec(text)?.[1] ?? null] as const;
    }),
  );
  return Object.fromEntries(found);
}

/** `wcf-agent version [--json]`: the agent, the Node inside it, the build's commit, and the tools this host has. */
export async function versionCommand(opts: { json?: boolean }): Promise<number> {
  const [firewall, resolver] = await Promise.all([probeTools(createRunner()), resolverTools()]);
  const fw = Object.fromEntries(TOOLS.map((t) => [t, firewall.get(t) ?? null]));
  if (opts.json) {
    await printJson({ version: AGENT_VERSION, commit: BUILD_COMMIT, node: process.version, firewall_tools: fw, resolver_tools: resolver });
    return 0;
  }
  const list = (tools: Record<string, string | null>) =>
    Object.entries(tools)
      .map(([t, v]) => `${t} ${v ?? 'not found'}`)
      .join('; ');
  process.stdout.write(`${versionLine()}\nfirewall tools: ${list(fw)}\nresolver tools: ${list(resolver)}\n`);
  return 0;
}

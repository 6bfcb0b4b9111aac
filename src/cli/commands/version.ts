import { CommandFailure, createCommandRunner } from '../../exec/runner.js';
import { createRunner, probeTools, TOOLS } from '../../firewall/index.js';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { AGENT_VERSION, BUILD_COMMIT, SBOM_SHA256, sbomPaths, versionLine } from '../../version.js';
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

interface SbomInfo {
  /** The SHA-256 the build recorded. */
  sha256: string;
  /** The first SBOM file found where it is installed, or null. */
  path: string | null;
  /** Whether that file's SHA-256 is the recorded one (null: no file found). */
  matches: boolean | null;
}

/** The SBOM this build names, and whether the one on disk is it. Null when built without one. */
async function sbomInfo(): Promise<SbomInfo | null> {
  if (!SBOM_SHA256) return null;
  for (const path of sbomPaths(process.execPath)) {
    let bytes: Buffer;
    try {
      bytes = await readFile(path);
    } catch {
      continue;
    }
    return { sha256: SBOM_SHA256, path, matches: createHash('sha256').update(bytes).digest('hex') === SBOM_SHA256 };
  }
  return { sha256: SBOM_SHA256, path: null, matches: null };
}

/** `wcf-agent version [--json]`: the agent, the Node inside it, the build's commit, and the tools this host has. */
export async function versionCommand(opts: { json?: boolean }): Promise<number> {
  const [firewall, resolver, sbom] = await Promise.all([probeTools(createRunner()), resolverTools(), sbomInfo()]);
  const fw = Object.fromEntries(TOOLS.map((t) => [t, firewall.get(t) ?? null]));
  if (opts.json) {
    await printJson({ version: AGENT_VERSION, commit: BUILD_COMMIT, node: process.version, firewall_tools: fw, resolver_tools: resolver, sbom });
    return 0;
  }
  const list = (tools: Record<string, string | null>) =>
    Object.entries(tools)
      .map(([t, v]) => `${t} ${v ?? 'not found'}`)
      .join('; ');
  const sbomLine = !sbom
    ? 'none (only scripts/build-binary.sh records one)'
    : `sha256 ${sbom.sha256}, ${sbom.path === null ? 'file not found' : `${sbom.path}${sbom.matches ? '' : ' (a different file: its SHA-256 differs)'}`}`;
  process.stdout.write(`${versionLine()}\nfirewall tools: ${list(fw)}\nresolver tools: ${list(resolver)}\nsbom: ${sbomLine}\n`);
  return 0;
}

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ResultPromise } from 'execa';
import { waitFor } from '../../../helpers/cli.js';
import { Netns } from '../../../netns/netns.js';
import { startAuthority } from './authority.js';
import { digAnswers, digStatus } from './dig.js';

/** A name the authority answers and nothing blocks: the resolver answers it once it is up. */
const READY_NAME = 'ready.lab.example';

/** How one resolver is set up in a lab, from the configuration snippets of docs/url-feed.md. */
export interface ResolverSpec {
  /** The daemon, for messages. */
  readonly daemon: string;
  /**
   * Writes the resolver's configuration into `dir` (the agent's file at `file`); answers the
   * command that runs it in the foreground, the agent's config.json keys, and a reload
   * command that fails.
   */
  setup(o: { ns: Netns; dir: string; file: string }): { argv: string[]; agent: Record<string, unknown>; failingReload: string[] };
  /** The longest an answer may take to change after the agent's write, the resolver's caches included (what docs/url-feed.md says). */
  readonly settleMs: number;
}

/** A real resolver in a namespace of its own, forwarding every query to the lab's authority. */
export interface RealResolverLab {
  readonly ns: Netns;
  readonly dir: string;
  /** The agent's file the resolver reads (RPZ zone or dnsmasq servers-file). */
  readonly file: string;
  /** The agent's config.json keys for this resolver. */
  readonly agent: Record<string, unknown>;
  readonly failingReload: string[];
  readonly settleMs: number;
  start(): Promise<void>;
  stop(): Promise<void>;
  status(name: string): Promise<string>;
  answers(name: string): Promise<string[]>;
  /** Polls until `name` answers `status` (within settleMs), so a cached answer may still be there at first. */
  settlesTo(name: string, status: 'NXDOMAIN' | 'NOERROR'): Promise<void>;
  /** What the resolver printed (for a failing test's message). */
  output(): string;
  destroy(): Promise<void>;
}

/**
 * `initial`: the agent's file as the resolver finds it at its first start (what install.sh writes), none: no file;
 * `zoneLines`: more lines of the authority's zone (records other than A).
 */
export async function createRealResolverLab(spec: ResolverSpec, o: { records: Record<string, string>; file: string; initial?: string; zoneLines?: readonly string[] }): Promise<RealResolverLab> {
  const ns = await Netns.create();
  const dir = mkdtempSync(join(tmpdir(), `wcf-${spec.daemon}-`));
  const file = join(dir, o.file);
  let out = '';
  try {
    await startAuthority(ns, dir, { [READY_NAME]: '198.18.9.9', ...o.records }, o.zoneLines);
  } catch (err) {
    await ns.destroy();
    throw err;
  }
  if (o.initial !== undefined) writeFileSync(file, o.initial);
  const { argv, agent, failingReload } = spec.setup({ ns, dir, file });
  let child: ResultPromise | undefined;
  const lab: RealResolverLab = {
    ns,
    dir,
    file,
    agent,
    failingReload,
    settleMs: spec.settleMs,
    async start() {
      const started = ns.spawn(argv[0]!, argv.slice(1));
      child = started;
      let exited = false;
      void started.finally(() => (exited = true));
      for (const s of [started.stdout, started.stderr]) s?.on('data', (d: Buffer) => (out += d.toString()));
      await waitFor(async () => {
        if (exited) throw new Error(`${spec.daemon} exited at its start:\n${out}`);
        return (await digStatus(ns, READY_NAME).catch(() => '')) === 'NOERROR';
      }, `${spec.daemon} to answer`, 20_000, 100);
    },
    async stop() {
      if (!child) return;
      child.kill('SIGTERM');
      await child;
      child = undefined;
    },
    status: (name) => digStatus(ns, name),
    answers: (name) => digAnswers(ns, name),
    async settlesTo(name, status) {
      await waitFor(async () => (await digStatus(ns, name)) === status, `${name} to answer ${status} at ${spec.daemon}`, spec.settleMs, 200);
    },
    output: () => out,
    async destroy() {
      await lab.stop();
      await ns.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await lab.start();
  } catch (err) {
    await lab.destroy();
    throw err;
  }
  return lab;
}

/** The documented command with the lab's own options after the tool's name (`rndc -c CONF reload rpz.wcf`), run in `prefix`. */
export function withLabOptions(documented: unknown, options: string[], prefix: string[] = []): string[] {
  if (!Array.isArray(documented) || documented.length === 0) throw new Error(`expected a documented command (an argument array), got ${JSON.stringify(documented)}`);
  const [tool, ...rest] = documented as string[];
  return [...prefix, tool!, ...options, ...rest];
}

/**
 * The API simulator in its own process (so its CPU and memory are not the
 * agent's), plus the control calls the benchmark needs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { onExit } from './netns.js';

const ROOT = join(import.meta.dirname, '../..');

export interface SimProcess {
  readonly url: string;
  readonly token: string;
  readonly agid: string;
  /** POST /_sim/agent-config (values stored verbatim). */
  setAgentConfig(values: Record<string, string | number>): Promise<void>;
  /** POST /_sim/indicators for each item, a few requests in flight at a time. */
  upsert(items: readonly { ip: string; score: number; ts?: number }[]): Promise<void>;
  close(): Promise<void>;
}

/** `now`: the simulator's clock at start (epoch s), default the real clock. */
export async function startSimulatorProcess(indicators: number, seed: number, now?: number): Promise<SimProcess> {
  // Node with tsx's loader directly (no tsx wrapper process), so one kill ends it.
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', 'test/simulator/main.ts', '--port', '0', '--indicators', String(indicators), '--seed', String(seed), ...(now === undefined ? [] : ['--now', String(now)])],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  onExit(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`simulator exited (${code}): ${stderr}`)));
  });
  const info = JSON.parse(line) as { url: string; token: string; agid: string; origin: string };
  const dispatcher = new Agent({ connections: 8, keepAliveTimeout: 10_000 });
  const headers = { authorization: `Bearer ${info.token}`, 'content-type': 'application/json' };
  const post = async (path: string, body: unknown): Promise<void> => {
    const r = await request(`${info.origin}${path}`, { method: 'POST', headers, body: JSON.stringify(body), dispatcher });
    const text = await r.body.text();
    if (r.statusCode !== 200) throw new Error(`simulator ${path}: ${r.statusCode} ${text}`);
  };
  return {
    url: info.url,
    token: info.token,
    agid: info.agid,
    setAgentConfig: (values) => post(`/_sim/agent-config?agid=${encodeURIComponent(info.agid)}`, values),
    async upsert(items) {
      let next = 0;
      const worker = async () => {
        while (next < items.length) await post('/_sim/indicators', items[next++]!);
      };
      await Promise.all(Array.from({ length: 8 }, worker));
    },
    async close() {
      await dispatcher.close();
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r(undefined) : child.once('exit', r)));
    },
  };
}

// The bundled API simulator for the demos (scripts/demo.mjs, scripts/demo-enforce.mjs): started on
// loopback as a child process, it prints its URL, token and agid as one JSON line.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/**
 * Starts the simulator with `indicators` indicators (seed 1); resolves with { url, token, agid,
 * child, stop }. --no-batch-import: without the simulator's deliberate 1,500 items sharing one ts
 * (kept for the tests), which the agent must warn about; a newcomer's first line would read as
 * data loss. `onSpawn(child)` is told of the process at once, before it answers: a clean-up that
 * runs while it starts can stop it.
 */
export async function startDemoSimulator(root, indicators, onSpawn = () => {}) {
  const child = spawn(join(root, 'node_modules/.bin/tsx'), ['test/simulator/main.ts', '--port', '0', '--indicators', String(indicators), '--seed', '1', '--no-batch-import'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  onSpawn(child);
  const stop = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  };
  process.on('exit', stop);
  const first = await new Promise((resolve, reject) => {
    const rl = createInterface({ input: child.stdout });
    rl.once('line', (l) => resolve(l));
    child.once('exit', (c) => reject(new Error(`simulator exited with ${c} before printing its URL`)));
  });
  const { url, token, agid } = JSON.parse(first);
  return { url, token, agid, child, stop };
}

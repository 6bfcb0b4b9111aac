/**
 * CLI: `npm run sim -- --port 0 --indicators 5000`
 * Prints ONE JSON line on stdout: {"url":...,"token":...,"agid":...,"origin":...}
 * and a human line on stderr. Exits cleanly on SIGTERM/SIGINT.
 */
import { parseArgs } from 'node:util';
import { startSimulator, type SimulatorOptions } from './index.js';

const USAGE = `usage: tsx test/simulator/main.ts [--port N] [--host H] [--indicators N] [--urls N] [--seed N]
       [--token T] [--agid A] [--now EPOCH_S] [--deleted-agent-response 404|empty] [--no-batch-import]`;

function int(name: string, v: string | undefined, min: number): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!/^-?\d+$/.test(v) || !Number.isSafeInteger(n) || n < min) {
    process.stderr.write(`--${name}: must be an integer >= ${min}\n${USAGE}\n`);
    process.exit(2);
  }
  return n;
}

async function main(): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        indicators: { type: 'string' },
        urls: { type: 'string' },
        seed: { type: 'string' },
        token: { type: 'string' },
        agid: { type: 'string' },
        now: { type: 'string' },
        'deleted-agent-response': { type: 'string' },
        'no-batch-import': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n${USAGE}\n`);
    process.exit(2);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const dar = values['deleted-agent-response'];
  if (dar !== undefined && dar !== '404' && dar !== 'empty') {
    process.stderr.write(`--deleted-agent-response: must be 404 or empty\n`);
    process.exit(2);
  }
  const opts: SimulatorOptions = {
    port: int('port', values.port, 0),
    host: values.host,
    indicators: int('indicators', values.indicators, 0),
    urls: int('urls', values.urls, 0),
    seed: int('seed', values.seed, Number.MIN_SAFE_INTEGER),
    token: values.token,
    agid: values.agid,
    now: int('now', values.now, 0),
    deletedAgentResponse: dar,
    batchImport: !values['no-batch-import'],
  };
  const sim = await startSimulator(opts);
  process.stdout.write(`${JSON.stringify({ url: sim.url, token: sim.token, agid: sim.agid, origin: sim.origin })}\n`);
  process.stderr.write(`wcf-simulator listening on ${sim.url} (${sim.data.count} indicators, agid ${sim.agid})\n`);
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    sim.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((e: unknown) => {
  process.stderr.write(`wcf-simulator: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});

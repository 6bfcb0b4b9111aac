// ca_file is an extra CA: added to what the agent trusts without it (Node's default roots, which
// NODE_EXTRA_CA_CERTS extends), not a replacement of them. A certificate that only the default
// roots vouch for stays trusted when ca_file names some other CA; ca_file alone still trusts
// nothing more than the CA it names.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTlsFront, type TlsFront } from '../../scripts/bench/tls-front.js';
import { fastFailConfig, runCli } from '../helpers/cli.js';
import { startSimulator, type Simulator } from '../simulator/index.js';

let sim: Simulator;
let front: TlsFront;
let dir: string;
let otherCa: string;

beforeAll(async () => {
  sim = await startSimulator({ indicators: 100, seed: 23 });
  dir = fastFailConfig(sim).dir;
  front = await startTlsFront(sim.url, dir);
  otherCa = join(dir, 'other-ca.crt');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'other-ca.key'), '-out', otherCa, '-days', '2', '-subj', '/CN=another corporate CA'], { stdio: 'ignore' });
});
afterAll(async () => {
  await front?.close();
  await sim?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function syncOnce(caFile: string, env: Record<string, string> = {}) {
  const cfg = fastFailConfig({ ...sim, url: front.url }, { ca_file: caFile, retries: 0 });
  try {
    const r = await runCli(['sync', '--once', '--json', '--config', cfg.path], env);
    return { exitCode: r.exitCode, out: JSON.parse(r.stdout) as { ok: boolean; message?: string | null } };
  } finally {
    rmSync(cfg.dir, { recursive: true, force: true });
  }
}

describe('ca_file adds to the default roots', () => {
  it('an API whose CA is among the default roots (here through NODE_EXTRA_CA_CERTS) stays trusted with ca_file naming another CA', async () => {
    const r = await syncOnce(otherCa, { NODE_EXTRA_CA_CERTS: front.caFile });
    expect(r.out.message ?? null, JSON.stringify(r.out)).toBeNull();
    expect(r.exitCode).toBe(0);
    expect(r.out.ok).toBe(true);
  });

  it('without it among the default roots, ca_file naming another CA does not make the API trusted', async () => {
    const r = await syncOnce(otherCa);
    expect(r.exitCode).toBe(3);
    expect(r.out.message).toMatch(/not trusted: set ca_file/);
  });

  it('ca_file naming the API\'s CA trusts it', async () => {
    const r = await syncOnce(front.caFile);
    expect(r.exitCode).toBe(0);
  });
});

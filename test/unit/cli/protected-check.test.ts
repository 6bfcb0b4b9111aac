import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import type { AgentConfig } from '../../../src/config/load.js';
import { protectedSetCheck } from '../../../src/cli/doctor/protected-check.js';

const dir = mkdtempSync(join(tmpdir(), 'wcf-doctor-protected-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const log = pino({ level: 'silent' });
const config = (over: Partial<AgentConfig> = {}) =>
  ({ base_url: 'http://203.0.113.9/api/v1', allowlist: ['198.51.100.0/24'], protect_ssh_sessions: false, state_dir: dir, ...over }) as AgentConfig;

describe('doctor: protected set', () => {
  it('lists each member with its source', async () => {
    const r = await protectedSetCheck(config(), log, async () => ({ entries: ['192.0.2.200'], whole: true }));
    expect(r.status).toBe('ok');
    expect(r.message).toMatch(/the kernel set \(1 entries\) holds none of them/);
    for (const line of [/^loopback\s+127\.0\.0\.0\/8$/m, /^link_local\s+169\.254\.0\.0\/16$/m, /^multicast\s+224\.0\.0\.0\/4$/m, /^reserved\s+240\.0\.0\.0\/4/m, /^allowlist\s+198\.51\.100\.0\/24$/m, /^api_server\s+203\.0\.113\.9$/m, /^own_address\s+127\.0\.0\.1$/m]) {
      expect(r.message).toMatch(line);
    }
  });

  it('warns, naming the entry and the member, when the kernel set holds a protected address', async () => {
    const r = await protectedSetCheck(config(), log, async () => ({ entries: ['192.0.2.200', '198.51.100.7', '203.0.113.9'], whole: true }));
    expect(r).toMatchObject({ status: 'warn', hint: expect.stringMatching(/next sync removes them/) });
    expect(r.message.split('\n')[0]).toBe('the kernel set holds protected addresses: 198.51.100.7 (allowlist 198.51.100.0/24), 203.0.113.9 (api_server 203.0.113.9)');
  });

  it('an API host that does not resolve shows its last known addresses from state.json; an unreadable kernel set is said', async () => {
    writeFileSync(join(dir, 'state.json'), JSON.stringify({ apiLastKnown: { host: 'api.example.invalid', addresses: ['192.0.2.44'], at: 1 } }));
    const r = await protectedSetCheck(config({ base_url: 'https://api.example.invalid/api/v1' }), log, async () => {
      throw new Error('ipset v7.17: The set with the given name does not exist');
    });
    expect(r.status).toBe('ok');
    expect(r.message).toMatch(/^api_server_last_known\s+192\.0\.2\.44 \(api\.example\.invalid\)$/m);
    expect(r.message).toMatch(/^kernel set unreadable: ipset v7\.17: The set with the given name does not exist;/);
  });
});

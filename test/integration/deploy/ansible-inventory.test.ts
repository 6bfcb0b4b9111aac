// The README's Ansible command, as a newcomer first runs it: with the example inventory copied and
// no host added yet, or with no inventory at all. Ansible alone would skip the play ("no hosts
// matched") and exit 0; playbook.example.yml stops, naming the group and the example file.
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../helpers/packaging.js';

const ANSIBLE = join(ROOT, 'deploy', 'ansible');
const dir = mkdtempSync(join(tmpdir(), 'wcf-ansible-inv-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const playbook = (inventory: string) =>
  execa('ansible-playbook', ['-i', inventory, 'playbook.example.yml', '--check', '--diff'], {
    cwd: ANSIBLE,
    reject: false,
    timeout: 120_000,
    env: { ANSIBLE_LOCAL_TEMP: join(dir, 'tmp'), ANSIBLE_NOCOLOR: '1', ANSIBLE_RETRY_FILES_ENABLED: '0' },
  });

describe('playbook.example.yml with no host to install on', () => {
  it('the example inventory, copied as the README says and not yet edited: fails naming the group and the example', async () => {
    const inventory = join(dir, 'inventory');
    copyFileSync(join(ANSIBLE, 'inventory.example'), inventory);
    const r = await playbook(inventory);
    expect(r.exitCode).not.toBe(0);
    expect(String(r.stdout)).toMatch(/no host in the group wcf_agents: .*\[wcf_agents\].*inventory\.example/);
  });

  it('no inventory file at all: fails the same way, not "skipping: no hosts matched" and exit 0', async () => {
    const r = await playbook(join(dir, 'missing-inventory'));
    expect(r.exitCode).not.toBe(0);
    expect(String(r.stdout)).toMatch(/no host in the group wcf_agents/);
  });

  it('the example inventory parses, with the group the playbook names', async () => {
    const r = await execa('ansible-inventory', ['-i', join(ANSIBLE, 'inventory.example'), '--list'], { reject: false });
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(JSON.parse(String(r.stdout)).all.children).toContain('wcf_agents');
  });
});

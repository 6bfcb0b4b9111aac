import { chmodSync, copyFileSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli, writeConfig } from '../../helpers/cli.js';
import { AS_NOBODY } from '../../helpers/unprivileged.js';

// No simulator: check-config must not touch the network (base_url points nowhere).
const BASE = { agid: 'a1', base_url: 'http://192.0.2.1:1/api/v1' };

describe('check-config', () => {
  it('a good file: "config ok: PATH", exit 0, nothing written', async () => {
    const { path, dir } = writeConfig({ ...BASE, token: 't', metrics_listen: '127.0.0.1:9464' });
    const r = await runCli(['check-config', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toBe(`config ok: ${path}`);
    expect(existsSync(join(dir, 'state'))).toBe(false);
  });

  it('reads the config path from WCF_AGENT_CONFIG too', async () => {
    const { path } = writeConfig({ ...BASE, token: 't' });
    const r = await runCli(['check-config'], { WCF_AGENT_CONFIG: path });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^config ok: /);
  });

  it('schema problems: one path: message line each, exit 2', async () => {
    const { path } = writeConfig({ ...BASE, token: 't', maximun_rules: 5, min_prefix: 99, plugin: 'pf' });
    const r = await runCli(['check-config', '--config', path]);
    expect(r.exitCode).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/maximun_rules: unknown key/);
    expect(r.stderr).toMatch(/min_prefix: /);
    expect(r.stderr).toMatch(/plugin: /);
  });

  it('names other firewall managers own: exit 2 naming each key and the manager', async () => {
    const { path } = writeConfig({ ...BASE, token: 't', chain_name: 'ufw-user-input', table_name: 'firewalld', set_name: 'f2b-sshd' });
    const r = await runCli(['check-config', '--config', path]);
    expect(r.exitCode).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/chain_name: "ufw-user-input" is a name ufw uses for its own objects/);
    expect(r.stderr).toMatch(/table_name: "firewalld" is a name firewalld uses/);
    expect(r.stderr).toMatch(/set_name: "f2b-sshd" is a name fail2ban uses/);
    // Every other command refuses it the same way, before touching anything.
    expect((await runCli(['flush', '--config', path])).exitCode).toBe(2);
  });

  it('bad owned names and a bad metrics_listen: exit 2 naming the key', async () => {
    const names = writeConfig({ ...BASE, token: 't', chain_name: 'INPUT', set_name: 'a b' });
    let r = await runCli(['check-config', '--config', names.path]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/chain_name: /);
    expect(r.stderr).toMatch(/set_name: /);
    const metrics = writeConfig({ ...BASE, token: 't', metrics_listen: 'example.com:99999' });
    r = await runCli(['check-config', '--config', metrics.path]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/metrics_listen: "example\.com:99999"/);
  });

  it('a non-loopback metrics_listen is allowed with a note', async () => {
    const { path } = writeConfig({ ...BASE, token: 't', metrics_listen: '0.0.0.0:9464' });
    const r = await runCli(['check-config', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/metrics_listen: 0\.0\.0\.0 is not a loopback address/);
  });

  it('token_file: missing, empty or unreadable is exit 2; readable is fine', async () => {
    const { path, dir } = writeConfig({ ...BASE, token_file: 'token' });
    let r = await runCli(['check-config', '--config', path]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/token_file .*no such file/);
    writeFileSync(join(dir, 'token'), '\n');
    r = await runCli(['check-config', '--config', path]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/token_file: .* is empty/);
    writeFileSync(join(dir, 'token'), 'secret\n');
    r = await runCli(['check-config', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    // A token_file the service user cannot read: checked as an unprivileged user (root reads anything).
    chmodSync(dir, 0o755);
    chmodSync(path, 0o644);
    chmodSync(join(dir, 'token'), 0o644);
    r = await runCli(['check-config', '--config', path], {}, AS_NOBODY);
    expect(r.exitCode, r.stderr).toBe(0); // readable: that user gets through
    chmodSync(join(dir, 'token'), 0o000);
    r = await runCli(['check-config', '--config', path], {}, AS_NOBODY);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/token_file .*: permission denied/);
  });

  it('a missing ca_file or config file: exit 2', async () => {
    const { path } = writeConfig({ ...BASE, token: 't', ca_file: 'nope.pem' });
    let r = await runCli(['check-config', '--config', path]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/ca_file: cannot read .*nope\.pem/);
    r = await runCli(['check-config', '--config', '/nonexistent/config.json']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/no such file/);
  });

  it('the unedited example: exit 2, one line per placeholder key, in check-config and in sync alike', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wcf-it-'));
    const path = join(dir, 'config.json');
    copyFileSync(join(ROOT, 'config.json.example'), path);
    for (const args of [['check-config'], ['sync', '--once']]) {
      const r = await runCli([...args, '--config', path]);
      expect(r.exitCode, args.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr.split('\n')).toEqual([
        `wcf-agent: WCF_ERR_CONFIG: ${path} is not valid`,
        `  agid: still the example's placeholder "REPLACE-WITH-AGENT-ID"; set the real value`,
        `  token: still the example's placeholder "REPLACE-WITH-API-TOKEN"; set the real value`,
        `  base_url: api.example.net is the example's placeholder host; set your API's address`,
      ]);
    }
    expect(existsSync(join(dir, 'state'))).toBe(false);
  });

  it('a base_url that is not the API root: exit 2 naming base_url', async () => {
    const { path } = writeConfig({ ...BASE, base_url: 'http://192.0.2.1:1/', token: 't' });
    const r = await runCli(['check-config', '--config', path]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('  base_url: must be the API root, ending in /api/v1 (got path "/")');
  });

  it('a JSON syntax error: one FILE:LINE:COLUMN line; a mistyped key: did you mean', async () => {
    const { path } = writeConfig({});
    writeFileSync(path, '{\n  "agid": "a1",\n  "allowlist": [\n    "10.0.0.1",\n  ]\n}\n');
    let r = await runCli(['check-config', '--config', path]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toBe(`wcf-agent: WCF_ERR_CONFIG: ${path}:5:3: unexpected ']'`);
    const typo = writeConfig({ ...BASE, token: 't', maximum_rule: 5 });
    r = await runCli(['check-config', '--config', typo.path]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('  maximum_rule: unknown key (did you mean maximum_rules?)');
  });

  it('token exposure: a world-readable config holding the token warns; a group-writable one fails (exit 2)', async () => {
    const { path } = writeConfig({ ...BASE, token: 't' });
    chmodSync(path, 0o644);
    let r = await runCli(['check-config', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/warning: token: .* holds the API token and every user can read it \(mode 0644\)/);
    expect(r.stderr).toMatch(/warning: base_url: http:\/\/ sends the API token in clear text to 192\.0\.2\.1:1/);
    chmodSync(path, 0o664);
    r = await runCli(['check-config', '--config', path]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/writable by its group \(mode 0664\)/);
  });
});

import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, writeConfig } from '../../helpers/cli.js';
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
});

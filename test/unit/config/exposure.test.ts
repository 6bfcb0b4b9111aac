import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.js';
import { tokenExposure } from '../../../src/config/exposure.js';

const dir = mkdtempSync(join(tmpdir(), 'wcf-exposure-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function config(values: Record<string, unknown>, mode: number, name = 'config.json') {
  const path = join(dir, name);
  const text = JSON.stringify({ agid: 'a', base_url: 'https://api.example.test/api/v1', ...values });
  writeFileSync(path, text);
  chmodSync(path, mode);
  return parseConfig(text, path);
}

describe('token exposure', () => {
  it('0600 with https: nothing to say', () => {
    expect(tokenExposure(config({ token: 't' }, 0o600))).toEqual({ problems: [], warnings: [] });
  });

  it('a world-readable config holding the token: a warning naming the mode', () => {
    const r = tokenExposure(config({ token: 't' }, 0o644));
    expect(r.problems).toEqual([]);
    expect(r.warnings).toEqual([expect.stringMatching(/^token: .*config\.json holds the API token and every user can read it \(mode 0644\)/)]);
  });

  it('a group- or world-writable config: an error', () => {
    expect(tokenExposure(config({ token: 't' }, 0o660)).problems).toEqual([expect.stringMatching(/writable by its group \(mode 0660\)/)]);
    expect(tokenExposure(config({ token: 't' }, 0o602)).problems).toEqual([expect.stringMatching(/writable by every user \(mode 0602\)/)]);
  });

  it('a world-readable token_file: a warning; the config itself may then be readable', () => {
    const tf = join(dir, 'token');
    writeFileSync(tf, 'secret\n');
    chmodSync(tf, 0o644);
    const r = tokenExposure(config({ token_file: tf }, 0o644));
    expect(r.warnings).toEqual([expect.stringMatching(/^token_file: .* can be read by every user \(mode 0644\)/)]);
  });

  it('http:// to a remote host sends the token in clear: a warning; loopback is fine', () => {
    expect(tokenExposure(config({ token: 't', base_url: 'http://api.example.test/api/v1' }, 0o600)).warnings).toEqual([
      expect.stringMatching(/^base_url: http:\/\/ sends the API token in clear text to api\.example\.test/),
    ]);
    expect(tokenExposure(config({ token: 't', base_url: 'http://127.0.0.1:8080/api/v1' }, 0o600)).warnings).toEqual([]);
  });
});

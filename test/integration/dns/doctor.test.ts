import { mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, writeConfig } from '../../helpers/cli.js';
import { isRoot } from '../../netns/netns.js';
import { createResolverLab, type ResolverLab } from './resolver-lab.js';

/**
 * doctor's resolver checks, run inside the lab's namespace (where unbound listens) with
 * the namespace's own resolv.conf (`ip netns exec` mounts /etc/netns/NAME/resolv.conf).
 */
describe('doctor with url_feed on', () => {
  let lab: ResolverLab;
  let etc: string;
  const doctor = async (extra: Record<string, unknown> = {}) => {
    const cfg = writeConfig({ agid: 'a', base_url: 'http://127.0.0.1:9/api/v1', token: 't', url_feed: true, unbound_control: lab.control, unbound_conf_file: lab.includeFile, retries: 0, connect_timeout_ms: 200, ...extra });
    // `timeout`: a doctor that hangs (a FIFO read) ends, and fails the test, instead of the suite.
    const r = await runCli(['doctor', '--json', '--config', cfg.path], {}, ['timeout', '-s', 'KILL', '45', 'ip', 'netns', 'exec', lab.ns.name]);
    return new Map((JSON.parse(r.stdout) as { checks: { name: string; status: string; message: string }[] }).checks.map((c) => [c.name, c]));
  };

  beforeAll(async () => {
    if (!isRoot) throw new Error('the resolver tests need root to create network namespaces');
    lab = await createResolverLab({ records: { 'good.example': '198.18.0.1' } });
    etc = `/etc/netns/${lab.ns.name}`;
    mkdirSync(etc, { recursive: true });
  });
  afterAll(async () => {
    rmSync(etc, { recursive: true, force: true });
    await lab?.destroy();
  });

  it('unbound-control works, unbound answers, resolv.conf pointing elsewhere is a warning', async () => {
    writeFileSync(`${etc}/resolv.conf`, 'nameserver 192.0.2.53\n');
    const c = await doctor();
    expect(c.get('unbound-control')?.status).toBe('ok');
    expect(c.get('resolver answers')?.status).toBe('ok');
    expect(c.get('resolv.conf')?.status).toBe('warn');
    expect(c.get('resolv.conf')?.message).toContain('enforced nowhere');
    expect(c.get('resolver files')?.status).toBe('ok');
  });

  it('resolv.conf pointing at unbound is ok; a broken unbound-control fails', async () => {
    writeFileSync(`${etc}/resolv.conf`, 'nameserver 127.0.0.1\n');
    expect((await doctor()).get('resolv.conf')?.status).toBe('ok');
    const bad = await doctor({ unbound_control: ['unbound-control', '-c', `${lab.dir}/missing.conf`] });
    expect(bad.get('unbound-control')?.status).toBe('fail');
  });

  it('a resolver file the agent did not write fails the files check', async () => {
    const foreign = `${lab.dir}/foreign.conf`;
    writeFileSync(foreign, 'server:\n  local-zone: "x." static\n');
    const c = await doctor({ unbound_conf_file: foreign });
    expect(c.get('resolver files')?.status).toBe('fail');
    expect(c.get('resolver files')?.message).toContain('not written by wcf-agent');
  });

  it('a FIFO at unbound_conf_file fails the files check at once and is left as it is', async () => {
    const fifo = `${lab.dir}/fifo-blocks.conf`;
    await execa('mkfifo', [fifo]);
    const c = await doctor({ unbound_conf_file: fifo });
    expect(c.get('resolver files')?.status).toBe('fail');
    expect(c.get('resolver files')?.message).toMatch(/FIFO/);
    expect(statSync(fifo).isFIFO()).toBe(true);
  });
});

// `npm run demo -- --enforce` (as root): the agent enforcing for real, without a vendor account and
// without touching the host. The bundled API simulator runs on loopback; the agent runs with
// `netns` set, so every firewall command it runs goes into a throwaway network namespace, joined
// by a veth pair to a second one that plays a listed attacker. It shows what the kernel holds
// (the set's size, read with nft or ipset themselves), `explain` of one blocked address, a packet
// from that address dropped, and `hits` counting it; then removes both namespaces (the rules go
// with them) and checks that the host's own ruleset is byte for byte what it was. Ctrl-C (SIGINT),
// SIGTERM or SIGHUP (the terminal closed) at any point cleans up the same way.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDemoSimulator } from './demo-sim.mjs';

// 198.18.0.0/15 (benchmarking) for the link: the simulator never lists it, the host never routes it.
const AGENT_SIDE = '198.18.0.1';
const PEER_SIDE = '198.18.0.2';
const PORT = 8080;

class Interrupted extends Error {}

/** Is `tool` on PATH (root's PATH has /usr/sbin)? */
const has = (tool) => spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0;

/** The host's own ruleset as its tools print it, counters and timestamps left out: compared before and after. */
function hostRuleset() {
  const out = (cmd, args) => {
    const r = spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, LC_ALL: 'C' } });
    return r.status === 0 ? r.stdout : `(${cmd} failed: ${r.stderr.trim()})`;
  };
  return [
    has('nft') ? out('nft', ['list', 'ruleset']) : '',
    has('iptables-save')
      ? out('iptables-save', [])
          .split('\n')
          .filter((l) => !l.startsWith('#'))
          .map((l) => l.replace(/\[\d+:\d+\]$/, '[0:0]'))
          .join('\n')
      : '',
    has('ipset') ? out('ipset', ['save']) : '',
  ].join('\n--\n');
}

const NEEDS = `npm run demo -- --enforce needs root: it creates two network namespaces (ip netns) and applies
real firewall rules inside them (the host's own ruleset is not touched). Run it as root:
  sudo npm run demo -- --enforce
(npm run demo, without --enforce, needs no root: a dry run that touches no firewall.)`;

/** Runs the demo; answers the exit code. */
export async function enforceDemo(root) {
  if (process.getuid?.() !== 0) {
    console.error(NEEDS);
    return 2;
  }
  // `sudo npm run demo -- --enforce` built dist/ as root: it goes back to the user who ran sudo, so
  // their next `npm run build` can write it.
  const [uid, gid] = [process.env.SUDO_UID, process.env.SUDO_GID];
  if (uid && gid && /^[1-9]\d*$/.test(uid) && /^\d+$/.test(gid)) spawnSync('chown', ['-R', `${uid}:${gid}`, join(root, 'dist')], { stdio: 'ignore' });
  if (!has('ip')) {
    console.error('npm run demo -- --enforce needs the ip command (apt-get install iproute2)');
    return 2;
  }
  // nftables first, as `plugin: auto` picks; ipset with iptables when nft is missing.
  const plugin = has('nft') ? 'nftables' : has('ipset') && has('iptables') ? 'ipset' : undefined;
  if (!plugin) {
    console.error('npm run demo -- --enforce needs nftables (apt-get install nftables), or ipset and iptables (apt-get install ipset iptables)');
    return 2;
  }

  const ns = `wcf-demo-${process.pid}`;
  const peer = `${ns}-peer`;
  /** The namespaces the demo has made, or begun to make (an `ip netns add` cut short by a signal may have made one). */
  const namespaces = [];
  const children = new Set();
  let dir;
  let before;
  let sim;
  let interrupted = false;
  let cleaned;
  // Before anything is made: a signal from here on finds everything the demo makes listed for its clean-up.
  const onSignal = (signal, code) => () => {
    if (interrupted) return;
    interrupted = true;
    console.log(`\n== ${signal}: stopping, and removing what the demo made`);
    void cleanup().then(() => process.exit(code));
  };
  process.on('SIGINT', onSignal('SIGINT', 130));
  process.on('SIGTERM', onSignal('SIGTERM', 143));
  // The terminal closed (or the ssh session dropped): the same clean-up. Whatever is printed then
  // goes nowhere, and a write to the gone terminal fails (EIO): that must not stop the clean-up.
  process.on('SIGHUP', onSignal('SIGHUP', 129));
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});

  const ip = (...args) => {
    if (interrupted) throw new Interrupted();
    const r = spawnSync('ip', args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr.trim()}`);
    return r.stdout;
  };
  /** `cmd args` as a child, killed by the clean-up; its stdout captured or shown. */
  const run = (cmd, args, { capture = false, env = {} } = {}) => {
    if (interrupted) return Promise.reject(new Interrupted());
    const child = spawn(cmd, args, { stdio: ['ignore', capture ? 'pipe' : 'inherit', 'inherit'], env: { ...process.env, ...env } });
    children.add(child);
    let stdout = '';
    child.stdout?.on('data', (d) => (stdout += d));
    return new Promise((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code, signal) => {
        children.delete(child);
        if (interrupted) reject(new Interrupted());
        else resolve({ code: code ?? (signal ? 128 : 1), stdout });
      });
    });
  };
  const configPath = () => join(dir, 'config.json');
  const cli = (args, options) => run(process.execPath, [join(root, 'dist/cli.js'), ...args, '--config', configPath()], options);
  const must = async (what, p) => {
    const r = await p;
    if (r.code !== 0) throw new Error(`${what} failed (exit ${r.code})`);
    return r;
  };

  /** The demo's namespaces that exist now (`ip netns list` prints `NAME (id: N)`). */
  const existing = () =>
    spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' })
      .stdout.split('\n')
      .map((l) => l.split(' ')[0])
      .filter((n) => n === ns || n === peer);
  /** Idempotent: children stopped, namespaces removed (the rules with them), temp dir gone, the host compared. */
  const cleanup = () =>
    (cleaned ??= (async () => {
      for (const c of children) c.kill('SIGTERM');
      await Promise.all([...children].map((c) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('close', r)))));
      sim?.stop();
      if (sim && sim.child.exitCode === null && sim.child.signalCode === null) await new Promise((r) => sim.child.once('close', r));
      for (const n of [...namespaces].reverse()) spawnSync('ip', ['netns', 'del', n], { stdio: 'ignore' });
      if (dir) rmSync(dir, { recursive: true, force: true });
      const left = existing();
      const made = namespaces.filter((n) => !left.includes(n));
      console.log(`\n== removed the namespaces ${made.join(' and ') || '(none made yet)'}${left.length ? `; STILL THERE: ${left.join(', ')}` : ''}`);
      const same = before === undefined || hostRuleset() === before;
      console.log(same ? "== the host's own ruleset is what it was before (nft list ruleset, iptables-save, ipset save)" : "== WARNING: the host's own ruleset changed while the demo ran (something else changed it?)");
      return left.length === 0 && same;
    })());

  try {
    dir = mkdtempSync(join(tmpdir(), 'wcf-demo-'));
    before = hostRuleset();
    // A signal during the synchronous work above is handled only now: stop before making anything.
    await new Promise((r) => setImmediate(r));
    if (interrupted) throw new Interrupted();
    console.log(`\n== network namespaces: ${ns} (the agent's firewall) and ${peer} (a listed address), joined by a veth pair`);
    const leftOver = existing();
    if (leftOver.length) throw new Error(`network namespace ${leftOver.join(', ')} exists already (left by an earlier demo of the same process id?): remove it with ip netns del, then run the demo again`);
    for (const n of [ns, peer]) {
      // Listed before it is made: a signal that cuts `ip netns add` short still has it removed.
      namespaces.push(n);
      ip('netns', 'add', n);
      ip('-n', n, 'link', 'set', 'lo', 'up');
    }
    ip('-n', ns, 'link', 'add', 'wcfdemo0', 'type', 'veth', 'peer', 'name', 'wcfdemo1', 'netns', peer);
    ip('-n', ns, 'addr', 'add', `${AGENT_SIDE}/24`, 'dev', 'wcfdemo0');
    ip('-n', peer, 'addr', 'add', `${PEER_SIDE}/24`, 'dev', 'wcfdemo1');
    ip('-n', ns, 'link', 'set', 'wcfdemo0', 'up');
    ip('-n', peer, 'link', 'set', 'wcfdemo1', 'up');

    sim = await startDemoSimulator(root, process.env.DEMO_INDICATORS ?? '20000', (child) => {
      children.add(child);
      child.once('close', () => children.delete(child));
    });
    if (interrupted) throw new Interrupted();
    writeFileSync(
      configPath(),
      JSON.stringify({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin, netns: ns, state_dir: 'state' }, null, 2),
      { mode: 0o600 },
    );
    console.log(`== simulator: ${sim.url}; config: ${configPath()} (plugin ${plugin}, netns ${ns}; removed at the end)`);

    // One address the feed blocks, played by the peer: an address of its own, routed back to it.
    const plan = JSON.parse((await must('plan', cli(['plan', '--json'], { capture: true }))).stdout);
    const blocked = plan.entries.find((e) => !e.ip.includes('/'))?.ip;
    if (!blocked) throw new Error('the plan holds no single address to play');
    ip('-n', peer, 'addr', 'add', `${blocked}/32`, 'dev', 'wcfdemo1');
    ip('-n', ns, 'route', 'add', `${blocked}/32`, 'via', PEER_SIDE, 'dev', 'wcfdemo0');

    console.log('\n== wcf-agent sync (applied inside the namespace)');
    await must('sync', cli(['sync']));

    console.log(`\n== what the kernel holds (${plugin === 'nftables' ? 'nft list set' : 'ipset save'}, inside ${ns})`);
    const nsExec = (...args) => spawnSync('ip', ['netns', 'exec', ns, ...args], { encoding: 'utf8' }).stdout;
    if (plugin === 'nftables') {
      const size = (set) => JSON.parse(nsExec('nft', '-j', 'list', 'set', 'inet', 'wcf_agent', set) || '{"nftables":[]}').nftables.find((o) => o.set)?.set.elem?.length ?? 0;
      const [addresses, networks] = [size('wcf-blocklist'), size('wcf-blocklist-nets')];
      console.log(`set inet wcf_agent wcf-blocklist: ${addresses} addresses; wcf-blocklist-nets: ${networks} networks; ${addresses + networks} entries in all (the plan selected ${plan.entries.length})`);
    } else {
      const entries = nsExec('ipset', 'save', 'wcf-blocklist').split('\n').filter((l) => l.startsWith('add ') && !l.includes(' nomatch')).length;
      console.log(`ipset wcf-blocklist: ${entries} entries (the plan selected ${plan.entries.length})`);
    }

    console.log(`\n== wcf-agent explain ${blocked}`);
    await must('explain', cli(['explain', blocked]));

    console.log(`\n== a TCP connection from ${blocked} (in ${peer}) to ${AGENT_SIDE}:${PORT} (in ${ns})`);
    const probe = `const s=require('net').connect({host:'${AGENT_SIDE}',port:${PORT},localAddress:'${blocked}'});const t=setTimeout(()=>{console.log('no answer: dropped');process.exit(0)},1500);s.on('connect',()=>{clearTimeout(t);console.log('connected (NOT blocked)');process.exit(0)});s.on('error',(e)=>{clearTimeout(t);console.log('error: '+e.code);process.exit(0)});`;
    await run('ip', ['netns', 'exec', peer, process.execPath, '-e', probe]);

    console.log('\n== wcf-agent hits');
    await must('hits', cli(['hits']));
  } catch (err) {
    if (err instanceof Interrupted || interrupted) return new Promise(() => {}); // the signal handler exits once cleaned up
    console.error(`\nnpm run demo -- --enforce: ${err.message}`);
    await cleanup();
    // A signal that also ended a child (the terminal's SIGHUP reaches them all) has its own exit code.
    if (interrupted) return new Promise(() => {});
    return 1;
  }
  const clean = await cleanup();
  if (interrupted) return new Promise(() => {});
  console.log(`
Next: run it on a host of your own. Build the package and follow the quick start (README.md, "A first run"):
  npm run build:deb && sudo dpkg -i dist/wcf-agent_*_amd64.deb
  sudoedit /etc/wcf-agent/config.json     # agid, base_url, token from your platform's agent page`);
  return clean ? 0 : 1;
}

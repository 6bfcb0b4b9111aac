import { afterEach, describe, expect, it } from 'vitest';
import { NftablesPlugin } from '../../../src/firewall/nft/plugin.js';
import type { PluginOptions } from '../../../src/firewall/plugin.js';
import { DatagramStream } from '../../helpers/datagrams.js';
import { ADDR, createLab, type Lab } from '../../netns/netns.js';
import { CAP, net, options } from './common.js';

/**
 * Where the agent drops, proved with packets: by default before connection tracking, so a datagram
 * from a listed address never reaches a chain between raw (-300) and conntrack (-200); with
 * drop_hook "filter", after it (today's layout until
 * this release). Allowed traffic passes either way. Another table's chains at -250 and -150 count
 * what reaches them.
 */

let lab: Lab | undefined;
let stream: DatagramStream | undefined;

afterEach(async () => {
  await stream?.stop();
  stream = undefined;
  await lab?.destroy();
  lab = undefined;
});

/** Packets from `source` counted by the watcher table's chain at `priority` (-250: before conntrack; -150: after). */
async function counted(l: Lab, priority: '250' | '150', source: string): Promise<number> {
  const text = await l.host.exec('nft', ['list', 'chain', 'inet', 'watcher', `at${priority}`]);
  const m = new RegExp(`ip saddr ${source.replace(/\./g, '\\.')} counter packets (\\d+)`).exec(text);
  return Number(m?.[1] ?? NaN);
}

describe.each([
  { label: 'prerouting (the default)', dropHook: undefined, before: true },
  { label: 'filter', dropHook: 'filter' as const, before: false },
])('nftables, drop_hook $label', ({ dropHook, before }) => {
  it(`a datagram from a listed address is dropped ${before ? 'before' : 'after'} connection tracking; allowed ones pass`, async () => {
    lab = await createLab();
    // A lived-in host's chains on both sides of conntrack, and a stateful rule like any host's.
    const watch = (p: string) => `\tchain at${p} {\n\t\ttype filter hook prerouting priority -${p}; policy accept;\n\t\tip saddr ${ADDR.blocked} counter\n\t\tip saddr ${ADDR.inNet} counter\n\t\tip saddr ${ADDR.allowed} counter\n\t}\n`;
    await lab.host.exec('nft', ['-f', '-'], `table inet watcher {\n${watch('250')}${watch('150')}\tchain in { type filter hook input priority 0; ct state established,related accept; }\n}\n`);
    const o: Partial<PluginOptions> = dropHook ? { dropHook } : {};
    const plugin = new NftablesPlugin(options(lab.host.runner(), o));
    await plugin.apply([{ cidr: net(ADDR.blocked) }, { cidr: net(ADDR.net24) }], CAP);
    stream = await DatagramStream.start(lab, [ADDR.blocked, ADDR.inNet], [ADDR.allowed], 20);
    const w = await stream.during(() => new Promise((r) => setTimeout(r, 600)));
    expect([...w.through]).toEqual([]);
    expect(w.allowed).toBeGreaterThan(0);
    for (const source of [ADDR.blocked, ADDR.inNet]) {
      // Before conntrack, nothing reaches a chain at -250 (nor, so, conntrack at -200); in the filter stage everything does.
      for (const p of ['250', '150'] as const) {
        if (before) expect(await counted(lab, p, source), `${source} at -${p}`).toBe(0);
        else expect(await counted(lab, p, source), `${source} at -${p}`).toBeGreaterThan(0);
      }
    }
    expect(await counted(lab, '250', ADDR.allowed)).toBeGreaterThan(0);
  });
});

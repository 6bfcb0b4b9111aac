import { DIRECTIONS, directionHooks } from '../direction.js';
import type { PluginOptions } from '../plugin.js';
import { wantedChains } from './chains.js';
import { setDefs } from './sets.js';
import { nftHooks, nftLayout, type NftLayout } from './text.js';

/**
 * Every other way this agent lays out its table under the same names: each `direction`, `action`
 * and `log_blocked`. A table found exactly in one of these shapes was made by this agent with
 * other settings (a reload after `log_blocked` changed, an upgrade), not damaged: its chains are
 * laid out again in place and that is said as such, not as a repair.
 */
export function layoutVariants(o: PluginOptions): NftLayout[] {
  const own = nftLayout(o);
  const out: NftLayout[] = [];
  for (const direction of DIRECTIONS) {
    for (const action of ['DROP', 'REJECT'] as const) {
      for (const logBlocked of [false, true]) {
        const l = { ...nftLayout({ ...o, direction, action, logBlocked }), hooks: nftHooks(directionHooks(o.hookChains, direction)) };
        if (l.direction === own.direction && l.action === own.action && l.logBlocked === own.logBlocked) continue;
        out.push(l);
      }
    }
  }
  return out;
}

/** How many handles a table laid out as `l` takes: its chains, its sets and its rules. */
export function layoutSpan(l: NftLayout): number {
  const chains = wantedChains(l);
  return chains.length + setDefs(l).length + chains.reduce((n, c) => n + c.rules.length, 0);
}

/** What a layout is, for people: `direction both, action DROP, log_blocked off`. */
export function describeLayout(l: NftLayout): string {
  return `direction ${l.direction}, action ${l.action}, log_blocked ${l.logBlocked ? 'on' : 'off'}, hooks ${l.hooks.join('/')} at priority ${l.priority}`;
}

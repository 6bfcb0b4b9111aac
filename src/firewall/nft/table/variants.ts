import { DIRECTIONS } from '../../direction.js';
import type { PluginOptions } from '../../plugin.js';
import { wantedChains } from './chains.js';
import { setDefs } from './sets.js';
import { nftLayout, type NftLayout } from '../text.js';

/**
 * Every other way this agent lays out its table under the same names: each `drop_hook`,
 * `direction`, `action` and `log_blocked` (the filter stage with DROP is how the release before
 * drop_hook laid it out). A table found exactly in one of these shapes was made by this agent with
 * other settings (a reload after `log_blocked` changed, an upgrade), not damaged: its chains are
 * laid out again in place and that is said as such, not as a repair.
 */
export function layoutVariants(o: PluginOptions): NftLayout[] {
  const own = nftLayout(o);
  const out: NftLayout[] = [];
  for (const dropHook of ['prerouting', 'filter'] as const) {
    for (const direction of DIRECTIONS) {
      for (const action of ['DROP', 'REJECT'] as const) {
        if (action === 'REJECT' && dropHook === 'prerouting') continue; // not a layout the agent makes
        for (const logBlocked of [false, true]) {
          const l = nftLayout({ ...o, direction, action, logBlocked, dropHook });
          if (describeLayout(l) !== describeLayout(own)) out.push(l);
        }
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
  return `drop_hook ${l.stage}, direction ${l.direction}, action ${l.action}, log_blocked ${l.logBlocked ? 'on' : 'off'}, hooks ${l.hooks.join('/')} at priority ${l.priority}`;
}

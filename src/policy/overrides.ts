import { RangeSet, type Cidr } from '../net/ipv4.js';
import type { ProtectedMember, ProtectedSet } from './protect.js';
import { capRules, type SelectedEntry } from './types.js';

/** One operator decision made on this host (`wcf-agent allow` / `block`). */
export interface LocalOverride {
  readonly cidr: Cidr;
  readonly action: 'allow' | 'block';
  /** Epoch s. */
  readonly createdAt: number;
  /** Epoch s when it stops counting; null = until removed. */
  readonly expiresAt: number | null;
  readonly note?: string;
}

export function isActive(o: LocalOverride, now: number): boolean {
  return o.expiresAt === null || o.expiresAt > now;
}

export function activeOverrides(list: readonly LocalOverride[], now: number): LocalOverride[] {
  return list.filter((o) => isActive(o, now));
}

/**
 * Which active override covers `address` (an address or network): the most
 * specific one whose network contains it, allow before block at equal size.
 * Undefined when none does. This is what `explain` shows.
 */
export function overrideFor(list: readonly LocalOverride[], address: Cidr, now: number): LocalOverride | undefined {
  let best: LocalOverride | undefined;
  for (const o of list) {
    if (!isActive(o, now) || o.cidr.start > address.start || o.cidr.end < address.end) continue;
    if (!best || o.cidr.prefix > best.cidr.prefix || (o.cidr.prefix === best.cidr.prefix && o.action === 'allow')) best = o;
  }
  return best;
}

/** Why a local block cannot be applied; the same checks `block` runs before it stores anything. */
export type BlockRefusal = { why: 'protected'; member: ProtectedMember } | { why: 'too_wide'; minPrefix: number } | { why: 'allowed'; by: LocalOverride };

export function refuseBlock(cidr: Cidr, ctx: { protectedSet: ProtectedSet; minPrefix: number; allows: readonly LocalOverride[] }): BlockRefusal | undefined {
  if (cidr.prefix < ctx.minPrefix) return { why: 'too_wide', minPrefix: ctx.minPrefix };
  const member = ctx.protectedSet.memberFor(cidr);
  if (member) return { why: 'protected', member };
  const by = ctx.allows.find((a) => a.cidr.start <= cidr.end && cidr.start <= a.cidr.end);
  if (by) return { why: 'allowed', by };
  return undefined;
}

export function refusalText(cidr: Cidr, r: BlockRefusal): string {
  switch (r.why) {
    case 'protected':
      return `${cidr.text} is protected (${r.member.source} ${r.member.cidr.text}${r.member.detail ? `, ${r.member.detail}` : ''}): the agent never blocks it`;
    case 'too_wide':
      return `${cidr.text} is wider than min_prefix /${r.minPrefix}`;
    case 'allowed':
      return `${cidr.text} overlaps the local allow ${r.by.cidr.text}`;
  }
}

export interface MergeInput {
  /** The selection from the feeds, in its order (manual first, then score). */
  readonly entries: readonly SelectedEntry[];
  readonly overrides: readonly LocalOverride[];
  readonly protectedSet: ProtectedSet;
  readonly minPrefix: number;
  readonly maximumRules: number;
  /** Epoch s. */
  readonly now: number;
}

export interface MergeResult {
  readonly entries: SelectedEntry[];
  /** Entries of the selection taken out by a local allow. */
  readonly allowed: number;
  /** Local blocks that were not applied, and why. */
  readonly refused: { override: LocalOverride; refusal: BlockRefusal }[];
}

/**
 * The selection with the operator's local overrides: a local allow beats
 * everything (every entry overlapping it leaves, as a whitelisted address
 * vetoes the /24 around it); a local block comes first in the cap, like a
 * manual block, but obeys the protected set and min_prefix like every other
 * entry. When a network is both selected and locally blocked, the longer
 * lifetime wins (a two-hour local block must not shorten a permanent manual one).
 * Pure; the result is capped at maximum_rules.
 */
export function mergeOverrides(input: MergeInput): MergeResult {
  const live = activeOverrides(input.overrides, input.now);
  const max = capRules(input.maximumRules);
  // No override in force (the usual case): the selection as it is, not copied (a million entries).
  if (live.length === 0) return { entries: input.entries.length <= max ? (input.entries as SelectedEntry[]) : input.entries.slice(0, max), allowed: 0, refused: [] };
  const allows = live.filter((o) => o.action === 'allow');
  const allowSet = new RangeSet(allows.map((o) => o.cidr));
  const refused: MergeResult['refused'] = [];
  const local = new Map<string, SelectedEntry>();
  for (const o of live) {
    if (o.action !== 'block') continue;
    const refusal = refuseBlock(o.cidr, { protectedSet: input.protectedSet, minPrefix: input.minPrefix, allows });
    if (refusal) refused.push({ override: o, refusal });
    else local.set(o.cidr.text, { cidr: o.cidr, reason: 'local', score: null, expiresAt: o.expiresAt });
  }
  let allowed = 0;
  const rest: SelectedEntry[] = [];
  // Without overrides (the usual case) nothing is looked up: a million entries need not each make their Cidr.
  const checking = allowSet.size > 0 || local.size > 0;
  for (const e of input.entries) {
    if (!checking) {
      rest.push(e);
      continue;
    }
    const cidr = e.cidr;
    if (allowSet.overlaps(cidr)) {
      allowed++;
      continue;
    }
    const mine = local.get(cidr.text);
    if (mine && (e.expiresAt === null || (mine.expiresAt !== null && e.expiresAt > mine.expiresAt))) local.delete(cidr.text);
    else if (mine) continue;
    rest.push(e);
  }
  const entries = [...local.values(), ...rest].slice(0, capRules(input.maximumRules));
  return { entries, allowed, refused };
}

/** Active overrides by action (metrics, status). */
export function countOverrides(list: readonly LocalOverride[], now: number): { allow: number; block: number } {
  const n = { allow: 0, block: 0 };
  for (const o of list) if (isActive(o, now)) n[o.action]++;
  return n;
}

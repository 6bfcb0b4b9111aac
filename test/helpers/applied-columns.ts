import { AppliedColumns } from '../../src/agent/state/applied-columns.js';
import type { AppliedEntry } from '../../src/agent/state/applied-entry.js';
import { toCidr } from '../../src/net/ipv4.js';

/** Applied entries (the state file's form) as columns; unparsable CIDRs left out. */
export function appliedColumnsOf(entries: readonly AppliedEntry[]): AppliedColumns {
  const out = new AppliedColumns(entries.length);
  for (const e of entries) {
    const c = toCidr(e.cidr);
    if (c) out.push(c.start, c.prefix, e.reason, e.expiresAt);
  }
  return out;
}

/** The columns as entries, in order. */
export function appliedEntriesOf(columns: AppliedColumns): AppliedEntry[] {
  return Array.from({ length: columns.length }, (_, i) => columns.entry(i));
}

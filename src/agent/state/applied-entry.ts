import type { Reason } from '../../policy/types.js';

/** An applied entry as the state file keeps it. */
export interface AppliedEntry {
  cidr: string;
  reason: Reason;
  expiresAt: number | null;
}

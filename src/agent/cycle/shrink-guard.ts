/**
 * Shrink guard: a broken server that serves an empty or gutted feed must not
 * unprotect a fleet. A pull that would empty the applied set, or shrink it by
 * more than `ratio`, is held back one cycle; it is applied when the next pull
 * agrees (shrinks past the guard too).
 */
export interface PendingShrink {
  at: number;
  size: number;
}

export interface GuardVerdict {
  allow: boolean;
  /** What to persist for the next cycle. */
  pending: PendingShrink | undefined;
  message?: string;
}

export function checkShrink(previous: number, next: number, ratio: number, pending: PendingShrink | undefined, now: number): GuardVerdict {
  if (previous === 0) return { allow: true, pending: undefined };
  const share = (previous - next) / previous;
  const shrinking = next === 0 || share > ratio;
  if (!shrinking) return { allow: true, pending: undefined };
  if (pending) {
    return { allow: true, pending: undefined, message: `the pull shrinks the set from ${previous} to ${next} entries again; applying it now that two pulls agree` };
  }
  return {
    allow: false,
    pending: { at: now, size: next },
    message: `shrink guard: the pull would shrink the set from ${previous} to ${next} entries (${Math.round(share * 100)}%, limit ${Math.round(ratio * 100)}%); held back for one cycle, applied if the next pull agrees`,
  };
}

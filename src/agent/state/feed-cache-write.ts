import { errorMessage, type WcfError } from '../../errors.js';
import type { Logger } from '../../log.js';

/**
 * Runs the feed-cache write a cycle deferred until after its apply. The cache is only a
 * speed-up: a failure (a full disk) is a warning and becomes the cycle's reported error,
 * never a reason to hold back or undo the apply.
 */
export function saveFeedCacheAfterApply(save: (() => void) | undefined, logger: Logger): Error | undefined {
  if (!save) return undefined;
  try {
    save();
    return undefined;
  } catch (err) {
    logger.warn({ code: (err as WcfError).code }, `feed cache not written, the firewall is updated anyway; the next pull starts from the previous cursor: ${errorMessage(err)}`);
    return err instanceof Error ? err : new Error(String(err));
  }
}

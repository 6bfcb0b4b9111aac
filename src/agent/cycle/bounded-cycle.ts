import { errorMessage } from '../../errors.js';
import type { FirewallPlugin } from '../../firewall/index.js';
import { runCycle } from './cycle.js';
import { type CycleDeps, type CycleOutcome } from './types.js';
import { checkClock, logClockCheck, systemClocks, type Clocks } from './clock-steps.js';

/**
 * One cycle as the daemon and `sync --once` run it (inside the lock): state.json re-read (a
 * manual sync may have written it since), the clocks checked (steps logged,
 * stored instants in the future forgotten), the cycle's API calls bounded by
 * cycle_deadline_seconds (then it fails with code 20 and the applied set stays; the state
 * report still goes out), and the size of the feed remembered for the next pull's item cap.
 */
export async function runBoundedCycle(deps: CycleDeps, plugin: FirewallPlugin, clocks: Clocks = systemClocks): Promise<CycleOutcome> {
  const { state, logger, config } = deps;
  state.refresh();
  const clock = checkClock(state.small, clocks);
  logClockCheck(clock, logger);
  try {
    state.update(clock.patch);
  } catch (err) {
    logger.warn(`state write failed: ${errorMessage(err)}`); // the cycle itself reports an unusable state dir
  }
  const deadline = deps.api.client.cycleDeadline;
  deadline.start(config.cycle_deadline_seconds * 1000);
  let outcome: CycleOutcome;
  try {
    outcome = await runCycle(deps, plugin);
  } finally {
    deadline.stop();
  }
  const feed = outcome.plan?.pulled.feed;
  if (feed !== undefined && feed > (state.small.largestFeed ?? 0)) {
    try {
      state.update({ largestFeed: feed });
    } catch {
      /* only a bound for the next pull */
    }
  }
  return outcome;
}

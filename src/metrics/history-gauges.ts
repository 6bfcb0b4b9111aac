import { Gauge, type Registry } from 'prom-client';
import { PREFIX } from './registry.js';

/**
 * The change history's size and reach, read from state_dir at scrape time (a directory
 * listing and one 40-byte read): `history_max_mb` bounds the first; the second says how far
 * back `wcf-agent history` and `explain --at` can answer.
 */
export function registerHistoryGauges(registry: Registry, read: () => { bytes: number; oldest: number | undefined }): void {
  let last: { at: number; value: { bytes: number; oldest: number | undefined } } | undefined;
  // The two gauges of one scrape share one read.
  const stats = () => {
    const now = Date.now();
    if (!last || now - last.at > 1000) last = { at: now, value: read() };
    return last.value;
  };
  new Gauge({
    name: `${PREFIX}history_bytes`,
    help: 'Bytes the change history takes in state_dir (bounded by history_max_mb)',
    registers: [registry],
    collect() {
      this.set(stats().bytes);
    },
  });
  new Gauge({
    name: `${PREFIX}history_oldest_timestamp_seconds`,
    help: 'Epoch seconds of the oldest change the change history holds (0 = none)',
    registers: [registry],
    collect() {
      this.set(stats().oldest ?? 0);
    },
  });
}

import pino from 'pino';
import { Gauge, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { parseListen } from '../../../src/metrics/listen.js';
import { startMetricsServer, type MetricsServer } from '../../../src/metrics/server.js';
import { waitFor } from '../../helpers/cli.js';

/**
 * A flood of scrapes renders the metrics a few times, not once per scrape (each render of the
 * daemon's registry costs CPU and garbage: 60 clients scraping back to back took the agent from
 * 100 to 206 MB), and a change still shows within a fraction of a second.
 */
let server: MetricsServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('the metrics listener’s renders', () => {
  it('forty scrapes at once: one render shared by all; a value changed since shows at a later scrape within a second', async () => {
    const registry = new Registry();
    const gauge = new Gauge({ name: 'wcf_test_value', help: 'a value the test changes', registers: [registry] });
    gauge.set(1);
    let renders = 0;
    const metrics = registry.metrics.bind(registry);
    registry.metrics = async () => {
      renders++;
      // A render that takes a moment, as the daemon's does at scale.
      await new Promise((r) => setTimeout(r, 20));
      return metrics();
    };
    server = await startMetricsServer(parseListen('127.0.0.1:0'), registry, pino({ level: 'silent' }));
    const url = server.url;
    const bodies = await Promise.all(Array.from({ length: 40 }, async () => (await fetch(url)).text()));
    expect(bodies.every((b) => /^wcf_test_value 1$/m.test(b))).toBe(true);
    expect(renders).toBeLessThanOrEqual(2);

    gauge.set(2);
    // Renders are kept a quarter of a second: the deadline leaves room for a loaded machine.
    await waitFor(async () => /^wcf_test_value 2$/m.test(await (await fetch(url)).text()), 'the new value in a scrape', 1500, 20);
  });
});

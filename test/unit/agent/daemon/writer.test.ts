import { describe, expect, it } from 'vitest';
import { Writer } from '../../../../src/agent/daemon/writer.js';

describe("the daemon's one writer at a time", () => {
  it('runs jobs one after the other in the order asked, a failing one included, and says when it is busy', async () => {
    const w = new Writer();
    const events: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const first = w.run(async () => {
      events.push('cycle start');
      await gate;
      events.push('cycle end');
      return 1;
    });
    const second = w.run(async () => {
      events.push('override');
      throw new Error('apply failed');
    });
    const third = w.run(async () => {
      events.push('poll');
      return 3;
    });
    expect(w.busy).toBe(true);
    await Promise.resolve();
    expect(events).toEqual(['cycle start']); // nothing else starts while the first runs
    release();
    expect(await first).toBe(1);
    await expect(second).rejects.toThrow('apply failed');
    expect(await third).toBe(3);
    await w.idle();
    expect(events).toEqual(['cycle start', 'cycle end', 'override', 'poll']);
    expect(w.busy).toBe(false);
  });
});

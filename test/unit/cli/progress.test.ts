import { describe, expect, it } from 'vitest';
import { createProgress } from '../../../src/cli/progress.js';

function stream(isTTY: boolean) {
  const writes: string[] = [];
  return { isTTY, writes, write: (t: string) => writes.push(t) };
}

describe('progress line', () => {
  it('draws in place on a TTY after the delay, throttled, and clears at the end', () => {
    const s = stream(true);
    let t = 0;
    const p = createProgress({ stream: s, delayMs: 300, intervalMs: 100, now: () => t });
    p.onProgress!('feed', 1, 1000); // within the delay: nothing
    t = 400;
    p.onProgress!('feed', 2, 2000);
    t = 450;
    p.onProgress!('feed', 3, 3000); // throttled
    t = 520;
    p.onProgress!('feed', 4, 4000);
    p.done();
    expect(s.writes).toEqual([
      '\rpulling feed: 2 pages, 2,000 items\x1b[K\r',
      '\rpulling feed: 4 pages, 4,000 items\x1b[K\r',
      '\r\x1b[K',
    ]);
  });

  it('a quick pull draws nothing and clears nothing', () => {
    const s = stream(true);
    const p = createProgress({ stream: s, now: () => 0 });
    p.onProgress!('feed', 1, 10);
    p.done();
    expect(s.writes).toEqual([]);
  });

  it('is off when stderr is not a TTY (systemd, pipes) and in --json mode', () => {
    expect(createProgress({ stream: stream(false) }).onProgress).toBeUndefined();
    expect(createProgress({ stream: stream(true), json: true }).onProgress).toBeUndefined();
    const s = stream(false);
    createProgress({ stream: s }).done();
    expect(s.writes).toEqual([]);
  });
});

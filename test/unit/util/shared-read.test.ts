import { describe, expect, it } from 'vitest';
import { SharedRead } from '../../../src/util/shared-read.js';

/** One read shared by every caller, not started again sooner than its minimum age (on a clock the test moves). */
describe('SharedRead', () => {
  const setup = (minAge = (ms: number) => Math.max(1000, ms)) => {
    let now = 0;
    let reads = 0;
    let release: (() => void) | undefined;
    const read = new SharedRead(
      () => {
        reads++;
        return new Promise<number>((r) => (release = () => r(reads)));
      },
      minAge,
      () => now,
    );
    return { read, reads: () => reads, release: () => release!(), advance: (ms: number) => (now += ms) };
  };

  it('callers while a read is in flight share it: one read for a hundred', async () => {
    const s = setup();
    const all = Array.from({ length: 100 }, () => s.read.get());
    expect(s.reads()).toBe(1);
    s.release();
    expect(new Set(await Promise.all(all))).toEqual(new Set([1]));
  });

  it('the answer is given again until it is older than the minimum age, then one new read', async () => {
    const s = setup();
    const first = s.read.get();
    s.release();
    await first;
    s.advance(999);
    expect(await s.read.get()).toBe(1);
    expect(s.reads()).toBe(1);
    s.advance(1);
    const second = s.read.get();
    expect(s.reads()).toBe(2);
    s.release();
    expect(await second).toBe(2);
  });

  it('a read that took long is not started again sooner than it took', async () => {
    const s = setup();
    const first = s.read.get();
    s.advance(5000); // the read takes 5 s
    s.release();
    await first;
    s.advance(4000);
    await s.read.get();
    expect(s.reads()).toBe(1);
    s.advance(1000);
    void s.read.get();
    expect(s.reads()).toBe(2);
  });

  it('a failed read is answered (failed) to the callers within its minimum age, then tried again', async () => {
    let now = 0;
    let n = 0;
    const read = new SharedRead(() => (++n === 1 ? Promise.reject(new Error('nft: timed out')) : Promise.resolve(n)), () => 1000, () => now);
    await expect(read.get()).rejects.toThrow('timed out');
    await expect(read.get()).rejects.toThrow('timed out');
    now += 1000;
    expect(await read.get()).toBe(2);
  });
});

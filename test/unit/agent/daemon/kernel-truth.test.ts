import { describe, expect, it } from 'vitest';
import { KernelTruth } from '../../../../src/agent/daemon/kernel-truth.js';

/**
 * What the daemon says of the kernel after a write: a repair puts back what a look found, and an
 * apply's own account of what it wrote is not a look at the kernel, so damage is said until a look
 * that begins after the write finds the kernel as applied; the write asks for that look at once.
 * Without damage, an apply's word stands.
 */
describe('KernelTruth', () => {
  it('damage found, then repaired: still damaged (and a look asked for) until a look finds the kernel as applied', () => {
    const asked: number[] = [];
    const t = new KernelTruth(() => 1000);
    t.followRepairs(() => asked.push(1));
    t.damaged('40000 of 100000 entries may be missing from the kernel', 40_000);
    t.written('repaired 300 ms after it was found');
    expect(t.get()).toMatchObject({ state: 'damaged', missing: 40_000 });
    expect(t.get().reason).toBe('40000 of 100000 entries may be missing from the kernel; put back, checking that everything is back');
    expect(asked).toHaveLength(1);
    // A second write before the look says the same, once.
    t.written('repaired again');
    expect(t.get().reason).toBe('40000 of 100000 entries may be missing from the kernel; put back, checking that everything is back');
    t.held('every entry applied is in the kernel (100000 checked)');
    expect(t.get()).toMatchObject({ state: 'held', missing: 0 });
  });

  it('no damage: a write keeps the kernel held, and asks for no look', () => {
    const asked: number[] = [];
    const t = new KernelTruth(() => 1000);
    t.followRepairs(() => asked.push(1));
    t.held('every entry applied is in the kernel (10 checked)');
    t.written('the last apply wrote the whole set');
    expect(t.get().state).toBe('held');
    expect(asked).toHaveLength(0);
  });
});

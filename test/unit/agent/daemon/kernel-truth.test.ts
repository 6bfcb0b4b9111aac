import { describe, expect, it } from 'vitest';
import { KernelTruth } from '../../../../src/agent/daemon/kernel-truth.js';

/**
 * What the daemon says of the kernel after a write: a repair puts back what a verification found,
 * so the damage is said until a look confirms, when another change was heard after that
 * verification began; without one (or on a host whose other tools churn harmlessly) a write
 * stands for the kernel as applied.
 */
describe('KernelTruth', () => {
  it('damage found, then a repair with a later change unchecked: still damaged, until a look finds the kernel as applied', () => {
    let heard: string | undefined = 'changed by nft (pid 7)';
    const t = new KernelTruth(() => 1000);
    t.followSuspicion(() => heard);
    t.damaged('40000 of 100000 entries may be missing from the kernel', 40_000);
    t.written('repaired 300 ms after it was found');
    expect(t.get()).toMatchObject({ state: 'damaged', missing: 40_000 });
    expect(t.get().reason).toMatch(/^put back what the last check found missing, checking again after a later change \(changed by nft \(pid 7\)\)$/);
    heard = undefined;
    t.held('every entry applied is in the kernel (100000 checked)');
    expect(t.get()).toMatchObject({ state: 'held', missing: 0 });
  });

  it('damage found and repaired with nothing heard since: held', () => {
    const t = new KernelTruth(() => 1000);
    t.followSuspicion(() => undefined);
    t.damaged('missing from the kernel: nft set wcf-blocklist', 20);
    t.written('repaired 20 ms after it was found');
    expect(t.get()).toMatchObject({ state: 'held', reason: 'repaired 20 ms after it was found', confirmedAt: 1000 });
  });

  it('no damage: another tool’s harmless changes heard and unchecked do not take readiness away at a write', () => {
    const t = new KernelTruth(() => 1000);
    t.followSuspicion(() => 'changed by kube-proxy (pid 9)');
    t.held('every entry applied is in the kernel (10 checked)');
    t.written('the last apply wrote the whole set');
    expect(t.get().state).toBe('held');
  });
});

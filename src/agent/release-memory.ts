/**
 * After a cycle, give back to the system the memory the cycle used. V8 (Node 24) neither
 * collects a large cycle's garbage while the daemon sleeps (its memory reducer sees no idle
 * time) nor returns freed heap pages to the kernel after an ordinary collection: a
 * million-entry cycle left the daemon holding over a gigabyte it no longer used. A
 * "last resort" collection does both, in a few tens of milliseconds for the heap that is
 * left between cycles (100-200 ms after a million-entry cycle).
 *
 * `gc` exists only when Node runs with --expose-gc (the agent's own flags, on the first
 * line of dist/cli.js and in the single binary); elsewhere (tests) this does nothing.
 */
export function releaseCycleMemory(): void {
  const gc = (globalThis as { gc?: (options?: { type: string; execution: string; flavor: string }) => void }).gc;
  gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

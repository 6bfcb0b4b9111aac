import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * The agent's children: which process ids are its own (so the firewall watcher
 * can tell the agent's own ruleset changes from another tool's: the kernel
 * names the process behind every nftables transaction), and the wrapper that
 * makes them die with the agent.
 *
 * A child must not outlive the agent: an `nft monitor` or a listing left
 * behind by a SIGKILLed agent kept running (and holding its memory) for good.
 * Node cannot call prctl(PR_SET_PDEATHSIG) in the child between fork and
 * exec, so every tool is started through util-linux's `setpriv --pdeathsig
 * KILL`, which sets it and then execs the tool in place (same process id; the
 * setting survives the exec of a tool without set-user-id or file
 * capabilities, which nft, ipset, iptables and ip are not). Where setpriv is
 * missing, tools run as before; systemd still stops the whole unit's cgroup.
 */

/** How long a finished child's id is still taken as the agent's (its kernel events arrive after it exits). */
const REMEMBER_MS = 120_000;
const own = new Map<number, number>(); // pid -> exit time (Infinity while running)

/** Remember a child the agent started. */
export function rememberChild(pid: number | undefined): void {
  if (pid !== undefined) own.set(pid, Infinity);
}

/** The child has exited (its id stays the agent's for a while: see REMEMBER_MS). */
export function childExited(pid: number | undefined, nowMs = Date.now()): void {
  if (pid === undefined) return;
  own.set(pid, nowMs);
  for (const [p, at] of own) if (nowMs - at > REMEMBER_MS) own.delete(p);
}

/**
 * Whether the agent had a command running within the last `ms`. An event source that dies
 * then most likely overflowed on the agent's own transaction (a million element events):
 * the gap it leaves is the agent's own write, not another tool's.
 */
export function ownActivityWithin(ms: number, nowMs = Date.now()): boolean {
  for (const at of own.values()) if (at === Infinity || nowMs - at <= ms) return true;
  return false;
}

/** Whether `pid` is (or recently was) a process the agent started. */
export function isOwnChild(pid: number): boolean {
  return own.has(pid);
}

let wrapper: readonly string[] | undefined;

/** Whether an executable named `file` is on PATH. */
export function onPath(file: string): boolean {
  for (const dir of (process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin').split(delimiter)) {
    try {
      accessSync(join(dir, file), constants.X_OK);
      return true;
    } catch {
      /* next */
    }
  }
  return false;
}

/** `['setpriv', '--pdeathsig', 'KILL']` when setpriv is installed, else nothing (looked up once). WCF_NO_PDEATHSIG=1 turns it off. */
export function deathSignalWrapper(): readonly string[] {
  if (wrapper === undefined) wrapper = process.env.WCF_NO_PDEATHSIG !== '1' && onPath('setpriv') ? ['setpriv', '--pdeathsig', 'KILL'] : [];
  return wrapper;
}

/**
 * Read-only commands (listings) that are running, so a stopping daemon can end
 * them: a stop waits for a write in flight (it is atomic and short), never for
 * a listing, which at a million nft elements takes minutes.
 */
const reads = new Set<() => void>();

/** Between stopReads() and allowReads(): a read starting then is ended at once. */
let refusing = false;

/** Register a running read-only command's kill; returns its unregister. */
export function trackRead(kill: () => void): () => void {
  if (refusing) {
    kill();
    return () => undefined;
  }
  reads.add(kill);
  return () => reads.delete(kill);
}

/**
 * End every read-only command running now, and any that starts until allowReads()
 * (the daemon is stopping: the work they serve fails and ends; a repair the watcher
 * was making must not start a minute-long listing while the stop waits for it).
 */
export function stopReads(): void {
  refusing = true;
  for (const kill of reads) kill();
  reads.clear();
}

/** Reads run again (on_stop=flush reads whose table it is, once the work in flight has ended). */
export function allowReads(): void {
  refusing = false;
}

import type { Netns } from '../../../netns/netns.js';

/** The DNS status of an A query to the namespace's 127.0.0.1:53: NOERROR, NXDOMAIN, ... */
export async function digStatus(ns: Netns, name: string): Promise<string> {
  const out = await ns.exec('dig', ['+time=2', '+tries=1', '@127.0.0.1', name, 'A']);
  return /status: (\w+)/.exec(out)?.[1] ?? 'NO-ANSWER';
}

/** The A records answered. */
export async function digAnswers(ns: Netns, name: string): Promise<string[]> {
  const out = await ns.exec('dig', ['+short', '+time=2', '+tries=1', '@127.0.0.1', name, 'A']);
  return out.split('\n').filter((l) => /^\d+\.\d+\.\d+\.\d+$/.test(l));
}

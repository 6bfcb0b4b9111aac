import { Resolver } from 'node:dns/promises';
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { AgentConfig } from '../../config/load.js';
import { createDnsRunner, runTool } from '../../dns/exec.js';
import { dnsOwnedFiles } from '../../dns/index.js';
import { readOwned } from '../../dns/owned-file.js';
import type { CommandRunner } from '../../exec/runner.js';
import { errorMessage } from '../../errors.js';
import { check, type CheckResult } from './check.js';
import { dnsmasqReadsCheck, dnsmasqReloadCheck } from './dnsmasq-check.js';

/** `nameserver` addresses of a resolv.conf text. */
export function nameservers(text: string): string[] {
  return [...text.matchAll(/^\s*nameserver\s+(\S+)/gm)].map((m) => m[1]!);
}

/** Where unbound answers: its `interface` options (a wildcard means loopback will do) and port. */
async function unboundListens(config: AgentConfig, runner: CommandRunner): Promise<{ addresses: string[]; port: number }> {
  const get = async (opt: string) => (await runTool(runner, [...config.unbound_control, 'get_option', opt])).split('\n').map((l) => l.trim()).filter(Boolean);
  const port = Number((await get('port'))[0] ?? 53) || 53;
  const addrs = (await get('interface')).map((a) => a.replace(/@\d+$/, ''));
  const addresses = addrs.length === 0 ? ['127.0.0.1'] : addrs.map((a) => (a === '0.0.0.0' ? '127.0.0.1' : a === '::0' || a === '::' ? '::1' : a));
  return { addresses, port };
}

/** Asks `address` for `localhost`, which every resolver answers itself (no query leaves the host). */
async function answers(address: string, port: number): Promise<string | undefined> {
  const r = new Resolver({ timeout: 2000, tries: 1 });
  r.setServers([address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`]);
  try {
    await r.resolve4('localhost');
    return undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // An answer that says "no such name" is still an answer.
    return code === 'ENOTFOUND' || code === 'ENODATA' ? undefined : errorMessage(err);
  } finally {
    r.cancel();
  }
}

function filesCheck(config: AgentConfig): CheckResult {
  const problems: string[] = [];
  for (const f of dnsOwnedFiles(config)) {
    if (existsSync(f)) {
      // The agent's own read (a FIFO or a symlink there fails at once instead of hanging doctor).
      try {
        readOwned(f);
      } catch (err) {
        problems.push(errorMessage(err));
        continue;
      }
      try {
        accessSync(f, constants.W_OK);
      } catch {
        problems.push(`${f} is not writable`);
      }
    } else {
      try {
        accessSync(dirname(f), constants.W_OK);
      } catch {
        problems.push(`${dirname(f)} (for ${f}) is missing or not writable`);
      }
    }
  }
  if (problems.length) return check('state', 'resolver files', 'fail', problems.join('\n'), 'choose paths the agent owns (unbound_conf_file / rpz_file / dnsmasq_file); the systemd unit allows writing exactly these');
  return check('state', 'resolver files', 'ok', `${config.dns_plugin} writes ${dnsOwnedFiles(config).join(', ') || 'only <state_dir>'}`);
}

/**
 * With url_feed on: the resolver files can be written, unbound-control works, the resolver
 * answers, /etc/resolv.conf points at it, and a running dnsmasq reads the agent's file
 * (otherwise the blocks are enforced nowhere).
 */
export async function dnsChecks(config: AgentConfig, resolvConf = '/etc/resolv.conf', runner: CommandRunner = createDnsRunner()): Promise<CheckResult[]> {
  if (!config.url_feed) return [];
  const out: CheckResult[] = [filesCheck(config)];
  let servers: string[] = [];
  try {
    servers = nameservers(readFileSync(resolvConf, 'utf8'));
  } catch (err) {
    out.push(check('other', 'resolv.conf', 'warn', `cannot read ${resolvConf}: ${errorMessage(err)}`));
  }
  if (config.dns_plugin === 'unbound') {
    try {
      await runTool(runner, [...config.unbound_control, 'status']);
      out.push(check('other', 'unbound-control', 'ok', `${config.unbound_control.join(' ')} status works`));
    } catch (err) {
      out.push(check('other', 'unbound-control', 'fail', errorMessage(err), 'is unbound running with remote-control enabled, and does unbound_control name the right -c/-s?'));
      return out;
    }
    const { addresses, port } = await unboundListens(config, runner).catch(() => ({ addresses: ['127.0.0.1'], port: 53 }));
    const failed = await answers(addresses[0]!, port);
    out.push(failed ? check('other', 'resolver answers', 'fail', `unbound at ${addresses[0]}:${port} does not answer: ${failed}`) : check('other', 'resolver answers', 'ok', `unbound answers at ${addresses[0]}:${port}`));
    const pointed = port === 53 && servers.some((s) => addresses.includes(s));
    out.push(
      pointed
        ? check('other', 'resolv.conf', 'ok', `${resolvConf} points at unbound (${servers.join(', ')})`)
        : check('other', 'resolv.conf', 'warn', `${resolvConf} lists ${servers.join(', ') || 'no nameserver'}, not unbound (${addresses.join(', ')}:${port}): the blocks are enforced nowhere on this host`,
            servers.includes('127.0.0.53') ? 'systemd-resolved is in front: set DNS= to unbound in resolved.conf, or point resolv.conf at unbound' : 'add `nameserver 127.0.0.1` (unbound) to /etc/resolv.conf'),
    );
    return out;
  }
  if (config.dns_plugin === 'rpz' || config.dns_plugin === 'dnsmasq') {
    const first = servers[0];
    const failed = first ? await answers(first, 53) : 'no nameserver in resolv.conf';
    const loads = config.dns_plugin === 'rpz' ? `make sure it loads ${config.rpz_file} as a response policy zone` : 'make sure it is the dnsmasq that reads the file';
    out.push(failed ? check('other', 'resolver answers', 'fail', `the host's resolver ${first ?? ''} does not answer: ${failed}`) : check('other', 'resolver answers', 'ok', `the host's resolver ${first} answers; ${loads}`));
  }
  if (config.dns_plugin === 'rpz' && !config.rpz_reload) out.push(check('other', 'rpz_reload', 'warn', 'rpz_reload is not set: the resolver picks up a new zone only on its own schedule', 'e.g. ["rndc","reload","rpz.wcf"] or ["unbound-control","auth_zone_reload","rpz.wcf"]'));
  if (config.dns_plugin === 'dnsmasq') {
    out.push(dnsmasqReadsCheck(config));
    const reload = dnsmasqReloadCheck(config);
    if (reload) out.push(reload);
  }
  return out;
}

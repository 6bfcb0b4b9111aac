import { statSync } from 'node:fs';
import { isIP } from 'node:net';
import type { AgentConfig } from './load.js';
import { runningAsRoot, trustProblems } from './trust.js';

/**
 * Ways the config exposes the API token or lets someone else steer a root daemon: a config
 * anyone may write (an error: it names the server, the token and the firewall objects), a
 * token anyone on the host may read, a token sent in clear over the network.
 */
export function tokenExposure(config: AgentConfig): { problems: string[]; warnings: string[] } {
  const problems: string[] = [];
  const warnings: string[] = [];
  const mode = (path: string): number | undefined => {
    try {
      return statSync(path).mode & 0o777;
    } catch {
      return undefined; // unreadable files are reported by the loader
    }
  };
  const octal = (m: number) => `0${m.toString(8).padStart(3, '0')}`;
  const cfg = mode(config.configPath);
  // As root the loader has refused these already (same lines); checked as another user, the modes still count.
  problems.push(...trustProblems(config.configPath, 'config', runningAsRoot()));
  if (config.token_file === undefined) {
    if (cfg !== undefined && cfg & 0o004) warnings.push(`token: ${config.configPath} holds the API token and every user can read it (mode ${octal(cfg)}): chmod 0600, or move it to token_file`);
  } else {
    const tf = mode(config.token_file);
    problems.push(...trustProblems(config.token_file, 'token_file', runningAsRoot()));
    if (tf !== undefined && tf & 0o004) warnings.push(`token_file: ${config.token_file} can be read by every user (mode ${octal(tf)}): chmod 0600`);
  }
  const url = new URL(config.base_url);
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    warnings.push(`base_url: ${url.protocol}// sends the API token in clear text to ${url.host}; use https://`);
  }
  return { problems, warnings };
}

function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  return h === '::1';
}

import { proxyEnvFor } from '../api/http.js';
import { isDnsName } from '../net/dns-name.js';
import type { NamedZone } from '../policy/domain-policy.js';

/** A host as a resolver sees it: lower case, no brackets, no trailing dot; undefined unless a DNS name. */
function asName(host: string): string | undefined {
  const h = host.trim().toLowerCase().replace(/^\[|\]$/g, '').replace(/\.+$/, '');
  return isDnsName(h) ? h : undefined;
}

/** An IPv4 address or an address range (`10.0.0.1-10.0.0.9`) that happens to pass as a name. */
function isAddressLike(name: string): boolean {
  return /^[\d.-]+$/.test(name);
}

/** The host of a proxy setting, with or without a scheme (`proxy.lan:3128` is read as http). */
function proxyHost(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const u = URL.parse(/^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`);
  return u?.hostname ? asName(u.hostname) : undefined;
}

/**
 * The host names in a NO_PROXY list: `.corp.lan` and `*.corp.lan` name `corp.lan`, `host:8443`
 * names `host`; `*`, addresses and address ranges name none.
 */
export function noProxyNames(list: string | undefined): string[] {
  const out: string[] = [];
  for (const raw of (list ?? '').split(',')) {
    const name = asName(raw.trim().replace(/^\*?\./, '').replace(/:\d+$/, ''));
    if (name && !isAddressLike(name)) out.push(name);
  }
  return out;
}

/**
 * Every host name the agent's own traffic depends on, which the resolver must never block
 * (a block would cut the agent off from the API that could lift it): the API host, the
 * proxies its transport would use and the NO_PROXY names that transport honours.
 *
 * The proxy decision is the transport's own (`proxyEnvFor`, src/api/http.ts): config `proxy`
 * carries every call and makes the environment and NO_PROXY irrelevant; else HTTPS_PROXY /
 * HTTP_PROXY in either case, with NO_PROXY. Both cases of each variable are taken (Node
 * prefers the lower-case one): protecting one name too many costs nothing, missing the one
 * in use locks the agent out.
 */
export function agentHostNames(o: { baseUrl: string; proxy: string | undefined; env: NodeJS.ProcessEnv }): NamedZone[] {
  const names = new Map<string, string>();
  const add = (name: string | undefined, source: string) => {
    if (name && !names.has(name)) names.set(name, source);
  };
  const api = URL.parse(o.baseUrl)?.hostname;
  add(api ? asName(api) : undefined, 'base_url');
  const env = proxyEnvFor(o.proxy, o.env);
  if (env) {
    // Where the transport's proxy came from: config `proxy` stands in all four variables.
    const from = (variable: string) => (o.proxy ? 'proxy' : variable);
    for (const k of ['https_proxy', 'HTTPS_PROXY', 'http_proxy', 'HTTP_PROXY'] as const) add(proxyHost(env[k]), from(k));
    for (const k of ['no_proxy', 'NO_PROXY'] as const) for (const n of noProxyNames(env[k])) add(n, k);
  }
  // An address is no name (the firewall's protected set covers it).
  return [...names].filter(([n]) => !isAddressLike(n)).map(([name, source]) => ({ name, source }));
}

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AUTHORITY } from './authority.js';
import { agentKeys, docSnippet, DOC_PATHS, snippetWith } from './doc-snippets.js';
import type { ResolverSpec } from './real-resolver.js';

/** The pid file docs/url-feed.md's reload without systemd names (Debian's). */
const DOC_PID_FILE = '/run/dnsmasq/dnsmasq.pid';

/**
 * dnsmasq: the `servers-file=` line of docs/url-feed.md in a dnsmasq that forwards everything
 * to the lab's authority. No systemd runs here, so the reload is the documented one for hosts
 * without it (pkill -HUP -x -F PIDFILE dnsmasq), with the lab's pid file.
 */
export const dnsmasq: ResolverSpec = {
  daemon: 'dnsmasq',
  settleMs: 5_000,
  setup({ dir, file }) {
    const pidFile = join(dir, 'dnsmasq.pid');
    writeFileSync(
      join(dir, 'dnsmasq.conf'),
      ['no-resolv', 'no-hosts', 'listen-address=127.0.0.1', 'bind-interfaces', `server=${AUTHORITY.address}#${AUTHORITY.port}`, snippetWith('dnsmasq-conf', { [DOC_PATHS.dnsmasqFile]: file })].join('\n'),
    );
    const reload = JSON.parse(docSnippet('dnsmasq-reload-pidfile').replace(DOC_PID_FILE, pidFile)) as string[];
    if (!reload.includes(pidFile)) throw new Error(`the documented reload without systemd no longer names ${DOC_PID_FILE}`);
    const agent = agentKeys('dnsmasq-agent');
    return {
      // -u root: the lab's files are root's own (0700 temp dir); -k: in the foreground.
      argv: ['dnsmasq', '-k', '-u', 'root', '-C', join(dir, 'dnsmasq.conf'), '-x', pidFile, '--log-facility=-'],
      agent: { ...agent, dnsmasq_file: file, dnsmasq_reload: reload },
      // No process has that pid file: pkill fails, dnsmasq is not signalled.
      failingReload: ['pkill', '-HUP', '-x', '-F', join(dir, 'no-such.pid'), 'dnsmasq'],
    };
  },
};

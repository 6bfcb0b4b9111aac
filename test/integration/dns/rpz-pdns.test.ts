import { parseRpzNames, renderRpzZone } from '../../../src/dns/render.js';
import { pdns } from './labs/pdns.js';
import { describeResolver } from './labs/rpz-suite.js';

/** The rpz plugin on a real PowerDNS Recursor, configured from the snippets of docs/url-feed.md. */
describeResolver(pdns, {
  fileName: 'rpz.wcf.zone',
  // The empty zone install.sh --dns rpz leaves (a resolver must find a zone at its start).
  initial: renderRpzZone([], { action: 'nxdomain' }, 1),
  holds: (text, name) => parseRpzNames(text).includes(name),
});

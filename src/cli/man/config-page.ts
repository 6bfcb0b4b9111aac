import { CONFIG_SECTIONS, configKeyRows } from './config-keys.js';
import type { PageInfo } from './commands-page.js';
import { escapeText, inline, line, macro, sentence } from './roff.js';

/**
 * wcf-agent.json(5): config.json, key by key, from the schema (type, default) and
 * src/config/descriptions.ts (meaning): the same rows as docs/configuration.md's tables.
 */


export function configPage(info: PageInfo): string {
  const rows = configKeyRows();
  const out: string[] = [
    macro.th('WCF-AGENT.JSON', '5', info.date, `wcf-agent ${info.version}`, 'File Formats'),
    macro.sh('NAME'),
    line('wcf\\-agent.json \\- configuration file of wcf\\-agent'),
    macro.sh('SYNOPSIS'),
    line('\\fI/etc/wcf\\-agent/config.json\\fR'),
    macro.sh('DESCRIPTION'),
    line(
      inline(
        "**wcf-agent**(8) reads one flat JSON object: from `--config`, else `$WCF_AGENT_CONFIG`, else `/etc/wcf-agent/config.json`. `agid`, `base_url` and one of `token` or `token_file` are required; every other key has a default. The values given here are local: `maximum_rules`, `score_threshold` and `sync_time` hold only until the server's stored configuration for this agent gives its own.",
      ),
    ),
    macro.pp(
      inline(
        'Unknown keys are an error, so a typo cannot pass silently (`maximum_rule: unknown key (did you mean maximum_rules?)`); keys that start with `//` are comments. The example\'s placeholders (`REPLACE-WITH-...`, the host `api.example.net`) and a `base_url` that does not end in `/api/v1` are errors naming the key. A JSON syntax error is one line, `config.json:12:5: unexpected \']\'`. Relative paths are taken relative to the configuration file.',
      ),
    ),
    macro.pp(
      inline(
        '`wcf-agent check-config` validates the file and changes nothing (the unit runs it before the daemon starts). The daemon reads the file again on SIGHUP (`systemctl reload wcf-agent`); a bad new file is refused with a log line and the running configuration is kept. The file holds the API token: keep it mode 0600 (`check-config` and `doctor` warn when every user can read it, and fail when others can write it).',
      ),
    ),
    macro.sh('KEYS'),
    macro.pp(inline('Each key with its type and its default (what applies when the key is absent).')),
  ];
  for (const [id, title] of Object.entries(CONFIG_SECTIONS)) {
    out.push(macro.ss(escapeText(title)));
    for (const r of rows.filter((row) => row.section === id)) {
      const absent = r.default.startsWith('required') ? r.default : `default: ${r.default}`;
      out.push(macro.tp(`\\fB${escapeText(r.key, true)}\\fR (${inline(r.type)}; ${inline(absent)})`, inline(sentence(r.meaning))));
    }
  }
  out.push(
    macro.sh('EXAMPLE'),
    macro.pp(inline('A host that blocks both directions with nftables and the URL feed at its unbound:')),
    macro.example([
      '{',
      '  "agid": "web-1",',
      '  "base_url": "https://ti.example.org/api/v1",',
      '  "token_file": "/etc/wcf-agent/token",',
      '  "plugin": "nftables",',
      '  "allowlist": ["192.0.2.10", "198.51.100.0/24"],',
      '  "metrics_listen": "127.0.0.1:9464",',
      '  "url_feed": true,',
      '  "unbound_conf_file": "/etc/unbound/wcf-agent/blocks.conf"',
      '}',
    ]),
    macro.pp(inline('As installed, `/etc/wcf-agent/config.json` is the full example, with a `//` comment for every key.')),
    macro.sh('FILES'),
    macro.tp('\\fI/etc/wcf\\-agent/config.json\\fR', inline('The configuration file.')),
    macro.sh('SEE ALSO'),
    line('\\fBwcf\\-agent\\fR(8), \\fBunbound.conf\\fR(5)'),
  );
  return out.join('\n') + '\n';
}

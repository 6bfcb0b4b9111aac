/**
 * config.json.example ships with placeholder values. An unedited copy must not
 * pass `check-config` (systemd's ExecStartPre) and start a daemon aimed at them.
 */
const PLACEHOLDER_MARK = 'REPLACE-WITH-';
/** The base_url path every route is relative to (the API root). */
export const API_ROOT_PATH = '/api/v1';

/** `key: message` lines for placeholder values and a base_url that is not the API root. */
export function placeholderProblems(values: { agid?: string | undefined; token?: string | undefined; base_url?: string | undefined }): string[] {
  const problems: string[] = [];
  for (const key of ['agid', 'token'] as const) {
    const v = values[key];
    if (v !== undefined && v.includes(PLACEHOLDER_MARK)) problems.push(`${key}: still the example's placeholder ${JSON.stringify(v)}; set the real value`);
  }
  const base = values.base_url;
  if (base !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(base);
    } catch {
      url = undefined; // the schema already words an unparsable URL
    }
    if (url) {
      if (isExampleHost(url.hostname)) problems.push(`base_url: ${url.hostname} is the example's placeholder host; set your API's address`);
      else if (!url.pathname.replace(/\/+$/, '').endsWith(API_ROOT_PATH)) {
        problems.push(`base_url: must be the API root, ending in ${API_ROOT_PATH} (got path ${JSON.stringify(url.pathname)})`);
      }
    }
  }
  return problems;
}

/** The names reserved for examples (RFC 2606): example.com/.net/.org and the .example top-level domain. */
function isExampleHost(host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return /(^|\.)example\.(com|net|org)$/.test(h) || /(^|\.)example$/.test(h);
}

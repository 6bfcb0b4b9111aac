/**
 * The keys config.json cannot do without, and where their values come from: a missing one is said
 * with that, and with the file to put it in, so the first run needs no search through the docs.
 */
const SOURCES: Record<string, string> = {
  agid: "this agent's ID on the platform: the platform's agent page shows it, or `wcf-agent agents list` (which needs only base_url and token)",
  base_url: "the API's root URL, ending in /api/v1: the platform's agent page shows it",
  token: "the API token from the platform's agent page, as token, or in a file of its own named by token_file (mode 0600)",
};

/** `key: missing: where it comes from; set it in PATH`, or undefined for a key that is not required. */
export function missingKeyProblem(key: string, configPath: string): string | undefined {
  const from = SOURCES[key];
  return from === undefined ? undefined : `${key}: missing: ${from}; set it in ${configPath}`;
}

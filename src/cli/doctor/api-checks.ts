import { localSettings } from '../../config/local-settings.js';
import type { AgentConfig } from '../../config/load.js';
import { LOCAL_DEFAULT_SOURCES, resolveSettings } from '../../config/server.js';
import { ApiAuthError, ApiStatusError, ApiUnreachableError, errorMessage } from '../../errors.js';
import type { Logger } from '../../log.js';
import { AGENT_VERSION } from '../../version.js';
import type { AgentRecord } from '../../api/wire.js';
import { createApi } from '../context.js';
import { check, type CheckResult } from './check.js';

export const SKEW_WARN_S = 30;
export const SKEW_FAIL_S = 300;

/** Clock check from the server's Date header (1 s resolution) and the local time when the answer came. */
export function clockCheck(dateHeader: string | undefined, localMs: number): CheckResult {
  const server = dateHeader === undefined ? NaN : Date.parse(dateHeader);
  if (!Number.isFinite(server)) {
    return check('other', 'clock', 'warn', 'the API sent no usable Date header; clock skew not checked', 'make sure NTP is on (timedatectl status)');
  }
  const skew = Math.round((localMs - (server + 500)) / 1000);
  // The header has 1 s resolution: +-1 s is noise.
  const text = Math.abs(skew) <= 1 ? 'in step with the API (within 1 s)' : `${Math.abs(skew)} s ${skew > 0 ? 'ahead of' : 'behind'} the API`;
  const hint = 'decayed scores and kernel timeouts follow the local clock: enable NTP (timedatectl set-ntp true)';
  if (Math.abs(skew) > SKEW_FAIL_S) return check('other', 'clock', 'fail', `local clock is ${text}`, hint);
  if (Math.abs(skew) > SKEW_WARN_S) return check('other', 'clock', 'warn', `local clock is ${text}`, hint);
  return check('other', 'clock', 'ok', `local clock is ${text}`);
}

function recordCheck(config: AgentConfig, record: AgentRecord | null): CheckResult {
  if (record === null) {
    return check('api', 'agent record', 'warn', `no record for agid ${config.agid} on the server (deleted, or never created)`,
      `the agent keeps enforcing its last known configuration but its reports are not stored; an admin can store a configuration with \`wcf-agent agents configure --agid ${config.agid} ...\``);
  }
  const { settings: s, problems } = resolveSettings(record.config, localSettings(config), LOCAL_DEFAULT_SOURCES);
  const summary = `maximum_rules ${s.maximum_rules}, score_threshold ${s.score_threshold}, sync_time ${s.sync_time} min, running ${s.running ? 'on' : 'off'}`;
  if (problems.length) {
    return check('api', 'agent record', 'warn', `stored configuration has invalid values (the agent keeps the previous ones): ${problems.join('; ')}`,
      `fix them with \`wcf-agent agents configure --agid ${config.agid} ...\``);
  }
  if (!s.running) {
    return check('api', 'agent record', 'warn', `${summary}: the agent syncs and reports but enforces nothing`,
      `turn enforcement on with \`wcf-agent agents configure --agid ${config.agid} --running on\``);
  }
  if (s.version && s.version !== AGENT_VERSION) {
    return check('api', 'agent record', 'warn', `${summary}; the server asks for agent version ${s.version}, this is ${AGENT_VERSION}`, 'upgrade (or downgrade) the agent package');
  }
  return check('api', 'agent record', 'ok', summary);
}

/**
 * API reachability (the version probe, no auth), the token (the agent-record call for our agid), the stored
 * configuration, and clock skew from the version probe's Date header. No retries: doctor
 * answers quickly. Nothing is written to the API.
 */
export async function apiChecks(config: AgentConfig, logger: Logger): Promise<CheckResult[]> {
  const api = createApi({ ...config, retries: 0 }, logger);
  const out: CheckResult[] = [];
  try {
    const started = Date.now();
    let version: Awaited<ReturnType<typeof api.version>>;
    try {
      version = await api.version();
    } catch (err) {
      const hint =
        err instanceof ApiUnreachableError
          ? `check base_url, DNS, proxy/ca_file and outbound firewall rules (try: curl ${config.base_url.replace(/\/+$/, '')}/version)`
          : err instanceof ApiStatusError
            ? 'base_url must be the API root ending in /api/v1'
            : 'is base_url the threat-intelligence API?';
      out.push(check('api', 'api', 'fail', `${config.base_url}: ${errorMessage(err)}`, `${hint}; token, agent record and clock were not checked`));
      return out;
    }
    const ms = Date.now() - started;
    const body = JSON.stringify(version.body) ?? '';
    out.push(check('api', 'api', 'ok', `${config.base_url} answers /version in ${ms} ms: ${body.length > 80 ? `${body.slice(0, 80)}…` : body}`));
    out.push(clockCheck(version.date, Date.now() - ms / 2));

    try {
      const record = await api.agent(config.agid);
      out.push(check('api', 'token', 'ok', `token accepted (auth_scheme ${config.auth_scheme})`));
      out.push(recordCheck(config, record));
    } catch (err) {
      if (err instanceof ApiAuthError) {
        out.push(check('api', 'token', 'fail', `token refused: ${errorMessage(err)}`,
          'check token / token_file (a current API token from the platform profile page) and auth_scheme: "bearer" sends `Bearer <token>`, "raw" the bare token'));
      } else {
        out.push(check('api', 'token', 'fail', `GET /feedback failed: ${errorMessage(err)}`, 'the API is up but the agent call fails; retry, or look at the server side'));
      }
    }
  } finally {
    await api.client.close();
  }
  return out;
}

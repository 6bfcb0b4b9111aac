import pino from 'pino';
import { ApiClient, type ClientOptions } from '../../src/api/client.js';
import { ThreatIntelApi } from '../../src/api/threat-intel.js';

/**
 * An API client with the unit tests' defaults (quick retries, a silent logger), pushed onto
 * `clients` so the test can close every one it made.
 */
export function testApi(clients: ApiClient[], o: Pick<ClientOptions, 'baseUrl' | 'token'> & Partial<ClientOptions>): ThreatIntelApi {
  const client = new ApiClient({
    authScheme: 'bearer',
    connectTimeoutMs: 2000,
    requestTimeoutMs: 10_000,
    retries: 3,
    maxResponseBytes: 64 * 1024 * 1024,
    userAgent: 'wcf-agent-test',
    logger: pino({ level: 'silent' }),
    retryMinDelayMs: 10,
    ...o,
  });
  clients.push(client);
  return new ThreatIntelApi(client);
}

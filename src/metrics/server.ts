import type { Server, ServerOptions } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from '../log.js';
import { SharedRead } from '../util/shared-read.js';
import { LISTENER_LIMITS, type ListenAddress, type ListenerLimits } from './listen.js';

/**
 * A scrape answered within this long of the last render gets that render again (and every scrape
 * while one renders shares it): 60 clients scraping back to back at 100,000 entries made ~730
 * renders a second and took the agent from 100 to 206 MB. Prometheus scrapes every 15 s or more;
 * a quarter of a second of staleness is not seen.
 */
const RENDER_MIN_AGE_MS = 250;

/** The daemon's probes: /healthz (alive) and /readyz (enforcing). */
export interface HealthProbes {
  live(): { ok: boolean; reason: string };
  ready(): Promise<{ ok: boolean; reason: string }>;
  /** What the daemon last found in the kernel (no read of its own). */
  truth?(): { missing: number; confirmedAt?: number };
}

export interface MetricsServer {
  /** `http://HOST:PORT/metrics` with the port actually bound. */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * A plain node:http server answering `GET /metrics` (and HEAD) from `registry`, and with
 * `health`, `GET /healthz` and `/readyz`: 200 or 503 with a one-line reason (for
 * Kubernetes' probes). Everything else is 404/405. Read-only: nothing here changes the agent.
 */
export async function startMetricsServer(
  listen: ListenAddress,
  registry: Registry,
  logger: Logger,
  health?: HealthProbes,
  limits: ListenerLimits = LISTENER_LIMITS,
): Promise<MetricsServer> {
  const render = new SharedRead(() => registry.metrics(), (ms) => Math.max(RENDER_MIN_AGE_MS, ms));
  // node:http as CommonJS exports, not an ES import: see src/api/http.ts.
  const server: Server = process.getBuiltinModule('node:http').createServer(serverOptions(limits), (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const probe = health && (path === '/healthz' || path === '/readyz') ? path : undefined;
    if (path !== '/metrics' && !probe) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end(`not found; metrics are at /metrics${health ? ', probes at /healthz and /readyz' : ''}\n`);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('method not allowed\n');
      return;
    }
    if (probe) {
      const answer = probe === '/healthz' ? Promise.resolve(health!.live()) : health!.ready();
      answer.then(
        (a) => res.writeHead(a.ok ? 200 : 503, { 'content-type': 'text/plain; charset=utf-8' }).end(req.method === 'HEAD' ? undefined : `${a.reason}\n`),
        (err: unknown) => res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' }).end(`not ready: ${(err as Error).message}\n`),
      );
      return;
    }
    render.get().then(
      (body) => {
        res.writeHead(200, { 'content-type': registry.contentType });
        res.end(req.method === 'HEAD' ? undefined : body);
      },
      (err: unknown) => {
        logger.warn(`metrics scrape failed: ${(err as Error).message}`);
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics collection failed\n');
      },
    );
  });
  boundConnections(server, limits, logger);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // Out of descriptors every accept fails (EMFILE) and says so: once a minute is enough.
  server.on('error', throttled((n, err: Error) => logger.warn({ count: n }, `metrics server error: ${err.message}${n > 1 ? ` (${n} times since the last line)` : ''}`)));
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const url = `http://${host}:${addr.port}/metrics`;
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The deadlines node:http takes only when the server is created (the checking interval cannot be changed later). */
function serverOptions(limits: ListenerLimits): ServerOptions {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: limits.checkEveryMs,
  };
}

/** A listener event repeated by a flood is logged at most this often (a flood of the port must not flood the journal too). */
const LOG_EVERY_MS = 60_000;

/** Calls `log` for the first event and then at most once per LOG_EVERY_MS, with the count since its last call and the latest event. */
function throttled<T>(log: (count: number, latest: T) => void): (latest: T) => void {
  let count = 0;
  let loggedAt = -Infinity;
  return (latest) => {
    count++;
    const now = performance.now();
    if (now - loggedAt < LOG_EVERY_MS) return;
    log(count, latest);
    count = 0;
    loggedAt = now;
  };
}

/** The cap on open connections and the idle deadline, with refusals logged. */
function boundConnections(server: Server, limits: ListenerLimits, logger: Logger): void {
  server.maxConnections = limits.maxConnections;
  // With no 'timeout' listener, node:http destroys a socket idle this long.
  server.timeout = limits.idleTimeoutMs;
  server.on(
    'drop',
    throttled((refused) =>
      logger.warn(
        { refused, maxConnections: limits.maxConnections },
        `metrics listener: ${refused} connection(s) refused, ${limits.maxConnections} already open (a client holding connections open, or a flood of the port)`,
      ),
    ),
  );
}

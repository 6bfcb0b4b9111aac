import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from '../log.js';
import type { ListenAddress } from './listen.js';

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
export async function startMetricsServer(listen: ListenAddress, registry: Registry, logger: Logger, health?: HealthProbes): Promise<MetricsServer> {
  // node:http as CommonJS exports, not an ES import: see src/api/http.ts.
  const server: Server = process.getBuiltinModule('node:http').createServer((req, res) => {
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
    registry.metrics().then(
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
  server.requestTimeout = 10_000;
  server.headersTimeout = 5_000;
  server.keepAliveTimeout = 5_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (err) => logger.warn(`metrics server error: ${err.message}`));
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

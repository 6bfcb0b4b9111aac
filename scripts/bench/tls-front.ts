/**
 * TLS in front of the simulator, for measuring the daemon as production runs it against an
 * https API (`npm run bench -- --only daemon --https`): a certificate for 127.0.0.1 made with
 * the openssl CLI, trusted through the config's `ca_file`, and a TLS server on loopback that
 * decrypts each connection and pipes it to the simulator's plain http port.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { join } from 'node:path';
import { createServer, type TLSSocket } from 'node:tls';

export interface TlsFront {
  /** The simulator's base URL, with https and the front's port. */
  url: string;
  /** The certificate to trust (PEM file), for config `ca_file`. */
  caFile: string;
  close(): Promise<void>;
}

export async function startTlsFront(simulatorUrl: string, dir: string): Promise<TlsFront> {
  const certFile = join(dir, 'front.crt');
  const keyFile = join(dir, 'front.key');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', keyFile, '-out', certFile, '-days', '2', '-subj', '/CN=wcf-bench', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  const upstream = new URL(simulatorUrl);
  const open = new Set<TLSSocket>();
  const server = createServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, (tls) => {
    open.add(tls);
    const up = connect(Number(upstream.port), upstream.hostname);
    tls.pipe(up).pipe(tls);
    tls.on('error', () => up.destroy());
    up.on('error', () => tls.destroy());
    tls.on('close', () => open.delete(tls));
  });
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(simulatorUrl);
  url.protocol = 'https:';
  url.port = String((server.address() as AddressInfo).port);
  return {
    url: url.href.replace(/\/$/, ''),
    caFile: certFile,
    close: () =>
      new Promise((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}

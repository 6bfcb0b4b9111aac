import { chmodSync, lstatSync, renameSync, unlinkSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Logger } from '../../log.js';
import { errorMessage } from '../../errors.js';

/**
 * How `wcf-agent allow/block/overrides remove` tell a running daemon to apply
 * the overrides file at once: a unix socket in the state dir (0700, root's),
 * made 0600. It carries one fixed command word and one line of answer, never
 * addresses or any other data: the daemon reads what to do from overrides.json,
 * which only a process allowed to write the state dir can change. No signal is
 * used, so SIGHUP keeps meaning "reload config.json" and nothing needs a PID.
 */
const FILE = 'control.sock';
/** The commands the daemon understands. */
export type ControlCommand = 'overrides';
const COMMANDS: readonly string[] = ['overrides'];
const MAX_LINE = 64;

export function controlPath(stateDir: string): string {
  return join(stateDir, FILE);
}

export interface ControlServer {
  close(): Promise<void>;
}

/** Whether something accepts connections on the socket at `path` now (a live daemon). */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = createConnection(path);
    sock.on('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.on('error', () => resolve(false));
  });
}

/** The socket file's identity, so that only the file this daemon created is ever removed by it. */
function fileId(path: string): string | undefined {
  try {
    const st = lstatSync(path);
    return st.isSocket() ? `${st.dev}:${st.ino}` : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Listen on the state dir's control socket. `handle` answers one command with
 * one line (no newline). A stale socket (a daemon that was killed: nothing
 * accepts on it) is replaced; a live one, or anything else at that name, is
 * left alone and the socket is not opened. The daemon holds the state dir's
 * daemon lock before it gets here, so a live socket would be another agent's
 * that does not take that lock (an older version).
 */
export async function listenControl(stateDir: string, handle: (cmd: ControlCommand) => Promise<string>, logger: Logger): Promise<ControlServer | undefined> {
  const path = controlPath(stateDir);
  try {
    if (!lstatSync(path).isSocket()) {
      logger.warn({ path }, 'not a socket: local overrides are applied by the next cycle instead of at once');
      return undefined;
    }
    if (await answers(path)) {
      logger.warn({ path }, 'another process listens on the control socket: local overrides are applied by the next cycle instead of at once');
      return undefined;
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const server: Server = createServer((sock: Socket) => {
    let buf = '';
    sock.setEncoding('latin1');
    sock.on('error', () => undefined);
    sock.on('data', (d: string) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl === -1 && buf.length <= MAX_LINE) return;
      sock.pause();
      const cmd = nl === -1 ? '' : buf.slice(0, nl);
      if (!COMMANDS.includes(cmd)) {
        sock.end('error unknown command\n');
        return;
      }
      handle(cmd as ControlCommand).then(
        (answer) => sock.end(`${answer.replace(/[\r\n]/g, ' ')}\n`),
        (err: unknown) => sock.end(`error ${errorMessage(err).replace(/[\r\n]/g, ' ')}\n`),
      );
    });
  });
  // Bound under a name of its own, then renamed into place (replacing the stale one): Node
  // removes a listening socket's file by the name it was bound to when it closes, which
  // then is this private name, never whatever sits at `path` by then.
  const bound = `${path}.new-${process.pid}`;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(bound, () => {
      server.off('error', reject);
      resolve();
    });
  });
  chmodSync(bound, 0o600);
  renameSync(bound, path);
  const created = fileId(path);
  server.unref();
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Only the socket this daemon created: never one another process put there since.
        if (created === undefined || fileId(path) !== created) return;
        try {
          unlinkSync(path);
        } catch {
          /* gone */
        }
      }),
  };
}

/**
 * Ask the daemon to run `cmd`; its one-line answer, or undefined when no daemon
 * listens (no socket, or a stale one). Fails when the daemon does not answer
 * within `timeoutMs`.
 */
export function askDaemon(stateDir: string, cmd: ControlCommand, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const sock = createConnection(controlPath(stateDir));
    let answer = '';
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`the daemon did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
    sock.setEncoding('utf8');
    sock.on('connect', () => sock.write(`${cmd}\n`));
    sock.on('data', (d: string) => (answer += d));
    sock.on('end', () => {
      clearTimeout(timer);
      resolve(answer.trim());
    });
    sock.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED') resolve(undefined);
      else reject(err);
    });
  });
}

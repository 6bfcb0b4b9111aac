/**
 * A one-line progress indicator on stderr while a command connects to the API and pulls the
 * feeds, updated in place with `\r` and cleared at the end. Only when stderr is a terminal and
 * the command is not in --json mode: never in the journal (systemd), pipes or tests.
 */
import type { RequestInfo, RequestObserver } from '../api/client.js';
import { escapeControls } from '../util/terminal-text.js';

export interface ProgressStream {
  isTTY?: boolean;
  write(text: string): unknown;
}

export interface ProgressOptions {
  /** --json: never draw. */
  json?: boolean;
  stream?: ProgressStream;
  /** Draw nothing for pulls shorter than this (ms). */
  delayMs?: number;
  /** Redraw at most this often (ms). */
  intervalMs?: number;
  now?: () => number;
  /** While connecting, the line is redrawn this often to show the time waited (ms); 0 = only on events (tests). */
  tickMs?: number;
}

export interface Progress {
  /** For CycleDeps.onProgress; undefined when progress is off. */
  readonly onProgress: ((what: string, pages: number, items: number) => void) | undefined;
  /**
   * `connecting to TARGET` until the API first answers, with the seconds waited and, once an attempt
   * failed, how many did and why the last one. Chains onto the client's request observer.
   */
  connecting(target: string, client: { onRequest: RequestObserver | undefined }): void;
  /** Clear the line (if anything was drawn). Call in a finally. */
  done(): void;
}

const CLEAR_EOL = '\x1b[K';
const thousands = (n: number) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

export function createProgress(options: ProgressOptions = {}): Progress {
  const stream = options.stream ?? process.stderr;
  if (options.json || !stream.isTTY) return { onProgress: undefined, connecting() {}, done() {} };
  const now = options.now ?? Date.now;
  const delayMs = options.delayMs ?? 300;
  const intervalMs = options.intervalMs ?? 100;
  const tickMs = options.tickMs ?? 1000;
  const started = now();
  let drawnAt: number | undefined;
  let drawn = false;
  let connect: { target: string; since: number; attempts: number; last?: string; timer?: NodeJS.Timeout } | undefined;
  // Ends with \r: the cursor waits at column 0, so a log line written meanwhile overwrites the progress text.
  const draw = (text: string) => {
    drawn = true;
    stream.write(`\r${text}${CLEAR_EOL}\r`);
  };
  const drawConnecting = () => {
    if (!connect || now() - connect.since < delayMs) return;
    // A timer may fire a moment before its second is up by the wall clock: within 50 ms it counts
    // as that second (the first tick said "0s" when it fired at 999 ms).
    const waited = Math.floor((now() - connect.since + 50) / 1000);
    const retry = connect.attempts > 0 ? `; ${connect.attempts} attempt${connect.attempts === 1 ? '' : 's'} failed, the last: ${connect.last}` : '';
    draw(`connecting to ${connect.target}: ${waited}s${retry}`);
  };
  const stopConnecting = () => {
    if (connect?.timer) clearInterval(connect.timer);
    connect = undefined;
  };
  return {
    onProgress(what, pages, items) {
      stopConnecting();
      const t = now();
      if (t - started < delayMs) return;
      if (drawnAt !== undefined && t - drawnAt < intervalMs) return;
      drawnAt = t;
      draw(`pulling ${what}: ${pages} page${pages === 1 ? '' : 's'}, ${thousands(items)} items`);
    },
    connecting(target, client) {
      connect = { target, since: now(), attempts: 0 };
      if (tickMs > 0) {
        connect.timer = setInterval(drawConnecting, tickMs);
        connect.timer.unref();
      }
      const previous = client.onRequest;
      client.onRequest = (info: RequestInfo) => {
        previous?.(info);
        if (!connect) return;
        if (info.status !== undefined) return stopConnecting();
        connect.attempts++;
        // The transport's words (DNS, TCP connect, TLS or HTTP, and the address), one line, escaped.
        connect.last = escapeControls((info.error ?? info.errorCode ?? 'no answer').replace(/\s+/g, ' ')).slice(0, 160);
        drawConnecting();
      };
    },
    done() {
      stopConnecting();
      if (drawn) stream.write(`\r${CLEAR_EOL}`);
      drawn = false;
    },
  };
}

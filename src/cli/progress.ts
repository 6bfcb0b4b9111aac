/**
 * A one-line progress indicator on stderr for long feed pulls, updated in place
 * with `\r` and cleared at the end. Only when stderr is a terminal and the
 * command is not in --json mode: never in the journal (systemd), pipes or tests.
 */

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
}

export interface Progress {
  /** For CycleDeps.onProgress; undefined when progress is off. */
  readonly onProgress: ((what: string, pages: number, items: number) => void) | undefined;
  /** Clear the line (if anything was drawn). Call in a finally. */
  done(): void;
}

const CLEAR_EOL = '\x1b[K';
const thousands = (n: number) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

export function createProgress(options: ProgressOptions = {}): Progress {
  const stream = options.stream ?? process.stderr;
  if (options.json || !stream.isTTY) return { onProgress: undefined, done() {} };
  const now = options.now ?? Date.now;
  const delayMs = options.delayMs ?? 300;
  const intervalMs = options.intervalMs ?? 100;
  const started = now();
  let drawnAt: number | undefined;
  let drawn = false;
  return {
    onProgress(what, pages, items) {
      const t = now();
      if (t - started < delayMs) return;
      if (drawnAt !== undefined && t - drawnAt < intervalMs) return;
      drawnAt = t;
      drawn = true;
      // Ends with \r: the cursor waits at column 0, so a log line written meanwhile overwrites the progress text.
      stream.write(`\rpulling ${what}: ${pages} page${pages === 1 ? '' : 's'}, ${thousands(items)} items${CLEAR_EOL}\r`);
    },
    done() {
      if (drawn) stream.write(`\r${CLEAR_EOL}`);
      drawn = false;
    },
  };
}

import { Writable } from 'node:stream';
import pino, { type Logger, type LevelWithSilent } from 'pino';
import { journalStream, stderrIsJournal } from './log-journal.js';
import { escapeControls } from './util/terminal-text.js';

const LEVEL_NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

/**
 * Human-readable lines for a terminal. A plain stream, not a pino transport:
 * transports use worker threads, which do not survive single-binary bundling.
 */
export function prettyStream(out: NodeJS.WritableStream = process.stderr): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (!line) continue;
        try {
          const { level, time, msg, pid: _pid, hostname: _h, ...rest } = JSON.parse(line) as Record<string, unknown>;
          const t = new Date(Number(time)).toISOString().slice(11, 19);
          const extra = Object.keys(rest).length ? ' ' + JSON.stringify(rest) : '';
          // One record, one line: a CR/LF or an escape sequence in a message (server text) cannot forge a line or drive the terminal.
          out.write(`${t} ${(LEVEL_NAMES[Number(level)] ?? String(level)).padEnd(5)} ${escapeControls(String(msg ?? '') + extra)}\n`);
        } catch {
          out.write(escapeControls(line) + '\n');
        }
      }
      done();
    },
  });
}

export type LogFormat = 'auto' | 'json' | 'text' | 'journal';

export interface LoggerOptions {
  level?: LevelWithSilent;
  /**
   * `journal`: one line per event with a `<N>` priority prefix and `key=value` fields; `text`:
   * readable lines; `json`: pino's lines. `auto` (default): journal when stderr is the journal,
   * text on a terminal, JSON otherwise (pipes, files, log shippers).
   */
  format?: LogFormat;
  /** Older spelling: true = text, false = json. */
  pretty?: boolean;
}

export function resolveLogFormat(format: LogFormat | undefined, pretty?: boolean): Exclude<LogFormat, 'auto'> {
  if (format && format !== 'auto') return format;
  if (pretty !== undefined) return pretty ? 'text' : 'json';
  if (stderrIsJournal()) return 'journal';
  return process.stderr.isTTY ? 'text' : 'json';
}

/** Logs go to stderr (stdout is reserved for --json output). */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? ((process.env.WCF_LOG_LEVEL as LevelWithSilent | undefined) ?? 'info');
  const format = resolveLogFormat(options.format, options.pretty);
  const dest = format === 'text' ? prettyStream() : format === 'journal' ? journalStream() : pino.destination({ fd: 2, sync: true });
  return pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.epochTime }, dest);
}

/**
 * A child logger whose warnings are written at debug. For the API client's retries: the
 * cycle logs the failure once when the retries are spent, so each attempt is a detail
 * (a failed cycle used to write three retry warnings before its one error).
 */
export function demoteWarnings(logger: Logger): Logger {
  const child = logger.child({});
  child.warn = child.debug.bind(child);
  return child;
}

export type { Logger };

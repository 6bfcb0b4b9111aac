import { Writable } from 'node:stream';
import pino, { type Logger, type LevelWithSilent } from 'pino';
import { escapeControls } from './safe-text.js';

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

export interface LoggerOptions {
  level?: LevelWithSilent;
  /** Force JSON or pretty; default pretty on a TTY, JSON otherwise (journal, pipes). */
  pretty?: boolean;
}

/** JSON to stderr (stdout is reserved for --json output). */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? ((process.env.WCF_LOG_LEVEL as LevelWithSilent | undefined) ?? 'info');
  const pretty = options.pretty ?? Boolean(process.stderr.isTTY);
  const dest = pretty ? prettyStream() : pino.destination({ fd: 2, sync: true });
  return pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.epochTime }, dest);
}

export type { Logger };

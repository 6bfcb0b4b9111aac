import { fstatSync } from 'node:fs';
import { Writable } from 'node:stream';

/**
 * Log lines for the systemd journal. journald reads a `<N>` prefix on each line of a
 * service's stderr as its syslog priority (sd-daemon(3)), so `journalctl -p warning`
 * can filter, and stamps each line itself: no time, pid or host here. One event is one
 * line: the message, then its fields as `key=value`.
 */

/** pino level -> syslog priority (debug 7, info 6, warning 4, err 3, crit 2). */
function priority(level: number): number {
  if (level >= 60) return 2;
  if (level >= 50) return 3;
  if (level >= 40) return 4;
  if (level >= 30) return 6;
  return 7;
}

/** One line whatever the text holds: line breaks and other control characters escaped. */
function oneLine(s: string): string {
  // eslint-disable-next-line no-control-regex
  return s.replace(/[\u0000-\u001f\u007f]/g, (c) => (c === '\n' ? '\\n' : c === '\t' ? '\\t' : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`));
}

/** `key=value`; a value with spaces, quotes or `=` is quoted JSON-style, objects are JSON. */
function field(key: string, value: unknown): string {
  if (typeof value !== 'string') return `${key}=${oneLine(JSON.stringify(value) ?? String(value))}`;
  return `${key}=${/^[^\s"=\\]+$/.test(value) ? oneLine(value) : oneLine(JSON.stringify(value))}`;
}

/** A pino JSON line as a journal line, e.g. `<4>sync failed, previous firewall state kept: ... code=WCF_ERR_API_STATUS`. */
export function journalLine(json: string): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return `<6>${oneLine(json)}`;
  }
  const { level, time: _t, pid: _p, hostname: _h, msg, ...rest } = rec;
  const fields = Object.entries(rest).map(([k, v]) => field(k, v));
  return `<${priority(Number(level))}>${oneLine(String(msg ?? ''))}${fields.length ? ` ${fields.join(' ')}` : ''}`;
}

/** A stream taking pino's JSON lines and writing journal lines to `out`. */
export function journalStream(out: NodeJS.WritableStream = process.stderr): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) out.write(`${journalLine(line)}\n`);
      done();
    },
  });
}

/**
 * Whether stderr is the journal: systemd sets JOURNAL_STREAM to `DEVICE:INODE` of the
 * stream it connects, and the variable is inherited by children whose stderr may be
 * elsewhere, so the pair is compared with what fd 2 really is.
 */
export function stderrIsJournal(env: NodeJS.ProcessEnv = process.env): boolean {
  const js = env.JOURNAL_STREAM;
  if (!js) return false;
  const m = /^(\d+):(\d+)$/.exec(js);
  if (!m) return false;
  try {
    const st = fstatSync(2, { bigint: true });
    return st.dev === BigInt(m[1]!) && st.ino === BigInt(m[2]!);
  } catch {
    return false;
  }
}

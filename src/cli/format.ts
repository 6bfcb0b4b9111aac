/** Plain aligned text tables and small value formatters for human output. */
import { once } from 'node:events';
import { jsonPieces } from './json-out.js';

export function table(headers: string[], rows: (string | number)[][], align: ('l' | 'r')[] = []): string {
  const cells = [headers, ...rows.map((r) => r.map(String))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => ((align[i] ?? 'l') === 'r' ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(cells[0]!), line(widths.map((w) => '-'.repeat(w))), ...cells.slice(1).map(line)].join('\n');
}

/** `2h 05m`, `3d 04h`, `45s`; null = never. */
export function duration(seconds: number | null): string {
  if (seconds === null) return 'never';
  if (seconds < 0) return 'passed';
  const s = Math.floor(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86400)}d ${String(Math.floor((s % 86400) / 3600)).padStart(2, '0')}h`;
}

export function isoTime(epochSeconds: number | undefined | null): string {
  return epochSeconds === undefined || epochSeconds === null ? '-' : new Date(epochSeconds * 1000).toISOString().replace('.000Z', 'Z');
}

let printed = false;
/** Whether this process printed its JSON answer already (main then adds no failure object). */
export const jsonPrinted = () => printed;

/** The value as indented JSON on stdout, in pieces, each after the reader took the last (see json-out.ts). */
export async function printJson(value: unknown): Promise<void> {
  printed = true;
  for (const piece of jsonPieces(value)) {
    if (!process.stdout.write(piece)) await once(process.stdout, 'drain');
  }
}

/**
 * `JSON.stringify(value, null, 2)`, produced piece by piece. `plan --json` and
 * `sync --once --json` at a million indicators print a hundred thousand
 * entries; one string of the whole document (plus its UTF-8 copy on the way to
 * stdout) was the largest allocation of the run, ~80 MB at its peak. Writing
 * it in 64 KiB pieces keeps the output's cost to one piece at a time (stdout
 * writes to files, pipes and terminals are synchronous on Linux).
 *
 * Same text as JSON.stringify for JSON data: `toJSON` honoured, `undefined`,
 * functions and symbols skipped in objects and `null` in arrays, non-finite
 * numbers as `null` (all through JSON.stringify on the leaves).
 */
const PIECE = 64 * 1024;

export function writeJson(value: unknown, write: (piece: string) => void): void {
  let buf = '';
  const emit = (s: string) => {
    buf += s;
    if (buf.length >= PIECE) {
      write(buf);
      buf = '';
    }
  };
  emitValue(value, '', '', emit, true);
  emit('\n');
  if (buf) write(buf);
}

/** Whether JSON.stringify would leave this property out of an object. */
function omitted(v: unknown): boolean {
  return v === undefined || typeof v === 'function' || typeof v === 'symbol';
}

function emitValue(value: unknown, key: string, indent: string, emit: (s: string) => void, top = false): void {
  let v = value;
  if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function') {
    v = (v as { toJSON(k: string): unknown }).toJSON(key);
  }
  if (v === null || typeof v !== 'object') {
    // Leaves (and, at the top, a value JSON.stringify answers undefined for, written as nothing).
    emit(omitted(v) ? (top ? '' : 'null') : JSON.stringify(v));
    return;
  }
  const inner = `${indent}  `;
  if (Array.isArray(v)) {
    if (v.length === 0) return emit('[]');
    emit('[');
    for (let i = 0; i < v.length; i++) {
      emit(i === 0 ? `\n${inner}` : `,\n${inner}`);
      emitValue(v[i], String(i), inner, emit);
    }
    emit(`\n${indent}]`);
    return;
  }
  let first = true;
  for (const k of Object.keys(v)) {
    const item = (v as Record<string, unknown>)[k];
    if (omitted(item)) continue;
    emit(first ? `{\n${inner}` : `,\n${inner}`);
    first = false;
    emit(`${JSON.stringify(k)}: `);
    emitValue(item, k, inner, emit);
  }
  emit(first ? '{}' : `\n${indent}}`);
}

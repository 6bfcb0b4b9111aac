/**
 * Text that came from outside (a server's error message or record, a zod issue quoting a
 * key the server sent) may hold terminal control sequences: ESC/OSC can retitle or repaint
 * the operator's terminal, a CR or LF can forge a log line, bidi and zero-width controls
 * reorder or hide what is shown. Every such character is shown escaped instead, in one
 * form (`\n`, `\x1b`, `\u202e`): C0 controls, DEL, C1 controls, zero-width and bidi marks,
 * bidi embeddings, overrides and isolates, the line and paragraph separators, and the BOM.
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]/g;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

export function escapeControls(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const named = NAMED[c];
    if (named) return named;
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** Like escapeControls but keeps line breaks (multi-line text of local tools, e.g. a firewall command's stderr). */
export function escapeControlsKeepLines(text: string): string {
  return text.split('\n').map(escapeControls).join('\n');
}

/** A server-supplied value for one table cell: escaped, and cut with an ellipsis past `max` characters. */
export function terminalSafe(text: string, max = 120): string {
  const safe = escapeControls(text);
  return safe.length > max ? `${safe.slice(0, max - 1)}…` : safe;
}

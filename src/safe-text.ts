/**
 * Text that came from outside (a server's error message, a zod issue quoting a key the
 * server sent) may hold terminal control sequences: ESC/OSC can retitle or repaint the
 * operator's terminal, a CR or LF can forge a log line. Every such character is shown
 * escaped instead (`\x1b`, `\r`, `\u202e`): C0 controls, DEL, C1 controls, and the
 * bidirectional overrides and line separators that reorder or break what is displayed.
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

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

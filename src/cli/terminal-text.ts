/**
 * Server-supplied text made safe for a terminal: control characters (C0, DEL, C1) and
 * Unicode bidi/format controls that could move the cursor, recolour the screen or reorder
 * what is shown are written as `\u{..}` escapes; long values are cut with an ellipsis.
 */
export function terminalSafe(text: string, max = 120): string {
  const safe = text.replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
  return safe.length > max ? `${safe.slice(0, max - 1)}…` : safe;
}

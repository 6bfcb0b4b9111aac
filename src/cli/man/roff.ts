/**
 * The small part of roff (the man(7) macros) the agent's man pages use, and the one conversion
 * of the help and description texts into it. Those texts are written for the terminal and for
 * Markdown: `code` in backticks, **bold**, [links](page.md). Here `code` and **bold** turn bold,
 * a link keeps its text, and everything else is escaped so no character of a description can
 * be read as a roff request or escape.
 */

/** Plain text for roff: backslashes, non-ASCII characters (as \[uXXXX]) and, in `literal`, every dash as a minus. */
export function escapeText(text: string, literal = false): string {
  let out = '';
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (ch === '\\') out += '\\e';
    else if (ch === '-' && literal) out += '\\-';
    else if (cp < 0x20 || cp === 0x7f) out += ' ';
    else if (cp > 0x7e) out += `\\[u${cp.toString(16).toUpperCase().padStart(4, '0')}]`;
    else out += ch;
  }
  return out;
}

const bold = (s: string) => `\\fB${s}\\fR`;
const italic = (s: string) => `\\fI${s}\\fR`;

/** Markdown-light text (backticks, **bold**, [text](link)) as roff inline text. */
export function inline(text: string): string {
  let out = '';
  // Code first: nothing inside backticks is markup.
  const re = /`([^`]+)`|\*\*([^*]+)\*\*|\[([^\]]+)\]\([^)]*\)/g;
  let last = 0;
  for (const m of text.matchAll(re)) {
    out += escapeText(text.slice(last, m.index));
    if (m[1] !== undefined) out += bold(escapeText(m[1], true));
    else if (m[2] !== undefined) out += bold(inline(m[2]));
    else out += inline(m[3]!);
    last = m.index + m[0].length;
  }
  return out + escapeText(text.slice(last));
}

/**
 * A command-line term as `--help` prints it (`-c, --config <path>`, `wcf-agent explain [options]
 * <target>`): flags and command words bold, `<placeholders>` italic, brackets and `|` as they are.
 */
export function term(text: string): string {
  let out = '';
  for (const m of text.matchAll(/<([^>]+)>|(\s+|[,[\]|])|([^\s,[\]|<]+)/g)) {
    if (m[1] !== undefined) out += italic(escapeText(m[1], true));
    else if (m[2] !== undefined) out += m[2];
    else if (m[3] === 'options' || m[3] === 'command') out += italic(m[3]);
    else out += bold(escapeText(m[3]!, true));
  }
  return out;
}

/** A line of text: a leading `.` or `'` would be read as a request. */
export function line(roffText: string): string {
  return /^[.']/.test(roffText) ? `\\&${roffText}` : roffText;
}

/** An argument of a macro line, quoted; a double quote inside is \(dq. */
export function arg(roffText: string): string {
  return `"${roffText.replaceAll('"', '\\(dq')}"`;
}

/** A description as a sentence: capital first letter, a full stop at the end. */
export function sentence(text: string): string {
  const t = /[.!?]$/.test(text) ? text : `${text}.`;
  return /^[a-z]/.test(t) ? t.charAt(0).toUpperCase() + t.slice(1) : t;
}

export const macro = {
  /** The title line; no hyphenation and a ragged right edge, as commands and paths read best unbroken. */
  th: (title: string, section: string, date: string, source: string, manual: string) =>
    [`.TH ${[title, section, date, source, manual].map((s) => arg(escapeText(s))).join(' ')}`, '.nh', '.ad l'].join('\n'),
  sh: (title: string) => `.SH ${arg(escapeText(title))}`,
  ss: (roffText: string) => `.SS ${arg(roffText)}`,
  /** An indented paragraph under a tag line (an option, a key, a code). */
  tp: (tagRoff: string, bodyRoff: string) => ['.TP', line(tagRoff), line(bodyRoff)].join('\n'),
  pp: (bodyRoff: string) => ['.PP', line(bodyRoff)].join('\n'),
  /** Lines shown as they are (no filling), in a fixed-width font where the output has one. */
  example: (lines: readonly string[]) => ['.PP', '.nf', '.RS 4', ...lines.map((l) => line(escapeText(l, true))), '.RE', '.fi'].join('\n'),
};

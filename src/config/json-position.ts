import { parse as parseLenient, type ParseError, ParseErrorCode } from 'jsonc-parser';

/**
 * A JSON syntax error as `FILE:LINE:COLUMN: unexpected 'X'`, the form editors and
 * compilers use, so an operator can jump to the spot. V8's own message quotes a
 * slice of the text (raw newlines included) and gives a position only for some
 * errors, so the spot is found again with jsonc-parser's error-reporting parser
 * (comments and trailing commas reported as errors, as JSON has neither).
 */
export function jsonSyntaxError(text: string, err: unknown, file: string): string {
  const errors: ParseError[] = [];
  parseLenient(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  const first = errors[0];
  let offset: number;
  let what: string;
  if (first) {
    offset = first.offset;
    what = describe(text, first);
  } else {
    // Not expected (both parsers follow the JSON grammar); V8's position, else the end.
    const m = /at position (\d+)/.exec(err instanceof Error ? err.message : String(err));
    offset = m ? Math.min(Number(m[1]), text.length) : text.length;
    what = offset >= text.length ? 'unexpected end of file' : `unexpected ${quote(text.slice(offset, offset + 1))}`;
  }
  const { line, column } = lineColumn(text, offset);
  return `${file}:${line}:${column}: ${what}`;
}

/** Where the first JSON syntax error in `text` is, without its content (for files never to be quoted); undefined when it parses. */
export function jsonErrorSpot(text: string): { line: number; column: number } | undefined {
  const errors: ParseError[] = [];
  parseLenient(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  return errors[0] ? lineColumn(text, errors[0].offset) : undefined;
}

function describe(text: string, e: ParseError): string {
  if (e.error === ParseErrorCode.InvalidCommentToken) return 'comments are not allowed in JSON (a "//name" key can hold a comment)';
  if (e.error === ParseErrorCode.UnexpectedEndOfString) return 'string not closed (a line break inside a string must be written \\n)';
  if (e.offset >= text.length) return 'unexpected end of file';
  return `unexpected ${quote(text.slice(e.offset, e.offset + Math.max(1, Math.min(e.length, 20))))}`;
}

/** 1-based line and column (in UTF-16 units, as editors count) of `offset`. */
export function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

/** The offending text in quotes, control characters written as U+XXXX so none reaches the terminal raw. */
function quote(s: string): string {
  // eslint-disable-next-line no-control-regex
  const safe = s.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`);
  return `'${safe}'`;
}

import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { escapeControls } from '../../../src/util/terminal-text.js';
import { prettyStream } from '../../../src/log.js';

const HOSTILE = 'boom\u001b]0;pwned\u0007\u001b[2J\r\n12:00:00 INFO  forged line\u009b31m\u202eabc';

describe('server text on a terminal', () => {
  it('escapeControls shows ESC, OSC, CR/LF, C1 and bidi overrides as visible escapes', () => {
    const out = escapeControls(HOSTILE);
    expect(out).toBe('boom\\x1b]0;pwned\\x07\\x1b[2J\\r\\n12:00:00 INFO  forged line\\x9b31m\\u202eabc');
    expect(out).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
    expect(escapeControls('plain text: 1.2.3.4/32 ü')).toBe('plain text: 1.2.3.4/32 ü');
  });

  it('the readable log writes one line per record, escapes and line breaks shown escaped', async () => {
    const sink = new PassThrough();
    let text = '';
    sink.on('data', (d: Buffer) => (text += d.toString('utf8')));
    const log = pino({ level: 'info' }, prettyStream(sink));
    log.warn({ detail: 'x\u009by' }, `sync failed: ${HOSTILE}`);
    await new Promise((r) => setImmediate(r));
    expect(text.split('\n').filter(Boolean)).toHaveLength(1);
    expect(text.trimEnd()).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
    expect(text).toContain('\\x1b]0;pwned');
  });
});

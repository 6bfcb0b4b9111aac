import { describe, expect, it } from 'vitest';
import { createProgress } from '../../../src/cli/progress.js';

function stream(isTTY: boolean) {
  const writes: string[] = [];
  return { isTTY, writes, write: (t: string) => writes.push(t) };
}

describe('progress line', () => {
  it('draws in place on a TTY after the delay, throttled, and clears at the end', () => {
    const s = stream(true);
    let t = 0;
    const p = createProgress({ stream: s, delayMs: 300, intervalMs: 100, now: () => t });
    p.onProgress!('feed', 1, 1000); // within the delay: nothing
    t = 400;
    p.onProgress!('feed', 2, 2000);
    t = 450;
    p.onProgress!('feed', 3, 3000); // throttled
    t = 520;
    p.onProgress!('feed', 4, 4000);
    p.done();
    expect(s.writes).toEqual([
      '\rpulling feed: 2 pages, 2,000 items\x1b[K\r',
      '\rpulling feed: 4 pages, 4,000 items\x1b[K\r',
      '\r\x1b[K',
    ]);
  });

  it('a quick pull draws nothing and clears nothing', () => {
    const s = stream(true);
    const p = createProgress({ stream: s, now: () => 0 });
    p.onProgress!('feed', 1, 10);
    p.done();
    expect(s.writes).toEqual([]);
  });

  it('is off when stderr is not a TTY (systemd, pipes) and in --json mode', () => {
    expect(createProgress({ stream: stream(false) }).onProgress).toBeUndefined();
    expect(createProgress({ stream: stream(true), json: true }).onProgress).toBeUndefined();
    const s = stream(false);
    createProgress({ stream: s }).done();
    expect(s.writes).toEqual([]);
  });
});

describe('connecting line', () => {
  it('says where it connects once the wait is noticeable, then each failed attempt and why, until the API answers', () => {
    const s = stream(true);
    let t = 0;
    const p = createProgress({ stream: s, delayMs: 300, tickMs: 0, now: () => t });
    const client: { onRequest: ((i: { route: string; method: string; status?: number; error?: string; durationMs: number }) => void) | undefined } = { onRequest: undefined };
    p.connecting('api.example.net:443', client);
    t = 2500;
    client.onRequest!({ route: '/feedback', method: 'GET', error: 'GET /feedback: DNS lookup of api.example.net failed: getaddrinfo EAI_AGAIN', durationMs: 2500 });
    t = 4000;
    client.onRequest!({ route: '/feedback', method: 'GET', status: 200, durationMs: 10 });
    // Answered: no more connecting line; the pull's line takes over.
    client.onRequest!({ route: '/ips', method: 'GET', error: 'later', durationMs: 1 });
    p.onProgress!('feed', 1, 1000);
    p.done();
    expect(s.writes).toEqual([
      '\rconnecting to api.example.net:443: 2s; 1 attempt failed, the last: GET /feedback: DNS lookup of api.example.net failed: getaddrinfo EAI_AGAIN\x1b[K\r',
      '\rpulling feed: 1 page, 1,000 items\x1b[K\r',
      '\r\x1b[K',
    ]);
  });

  it('a tick a moment early still counts its second (never "0s" after a second of waiting)', () => {
    const s = stream(true);
    let t = 0;
    const p = createProgress({ stream: s, delayMs: 300, tickMs: 0, now: () => t });
    const client: { onRequest: ((i: { route: string; method: string; status?: number; error?: string; durationMs: number }) => void) | undefined } = { onRequest: undefined };
    p.connecting('api.example.net:443', client);
    t = 999;
    client.onRequest!({ route: '/feedback', method: 'GET', error: 'refused', durationMs: 999 });
    t = 1900;
    client.onRequest!({ route: '/feedback', method: 'GET', error: 'refused', durationMs: 900 });
    expect(s.writes.map((w) => /: (\d+)s;/.exec(w)?.[1])).toEqual(['1', '1']);
  });

  it('keeps the observer the client had, and draws nothing off a TTY', () => {
    const seen: string[] = [];
    const client = { onRequest: (i: { route: string }) => void seen.push(i.route) } as { onRequest: ((i: { route: string; method: string; durationMs: number }) => void) | undefined };
    createProgress({ stream: stream(true), tickMs: 0 }).connecting('x:1', client);
    client.onRequest!({ route: '/version', method: 'GET', durationMs: 1 });
    expect(seen).toEqual(['/version']);
    const off = stream(false);
    const quiet = createProgress({ stream: off });
    const c2 = { onRequest: undefined };
    quiet.connecting('x:1', c2);
    expect(c2.onRequest).toBeUndefined();
  });
});

import { isIPv4 } from 'node:net';

/**
 * Linux glibc `struct utmp` (x86_64 and aarch64 alike: 384 bytes, little
 * endian on both). Only the fields read here are named.
 */
export const UTMP_RECORD_SIZE = 384;
const UT_TYPE = 0; // int16
const UT_PID = 4; // int32
const UT_LINE = 8; // char[32]
const UT_USER = 44; // char[32]
const UT_HOST = 76; // char[256]
const UT_ADDR_V6 = 348; // int32[4], network byte order
/** A logged-in user's session (sshd writes one per authenticated login). */
export const USER_PROCESS = 7;

export interface UtmpSession {
  readonly user: string;
  readonly line: string;
  readonly pid: number;
  /** The remote IPv4 address, from ut_addr_v6 or (when that is empty) an address literal in ut_host. */
  readonly address: string;
}

function cString(buf: Uint8Array, at: number, len: number): string {
  const slice = buf.subarray(at, at + len);
  const nul = slice.indexOf(0);
  return Buffer.from(nul === -1 ? slice : slice.subarray(0, nul)).toString('latin1');
}

function addressOf(view: DataView, buf: Uint8Array, at: number): string | undefined {
  const w = [0, 1, 2, 3].map((i) => view.getUint32(at + UT_ADDR_V6 + 4 * i, false));
  // An IPv4 address sits alone in the first word, or as an IPv4-mapped IPv6 address (::ffff:a.b.c.d).
  const v4 = w[1] === 0 && w[2] === 0 && w[3] === 0 && w[0] !== 0 ? w[0] : w[0] === 0 && w[1] === 0 && w[2] === 0xffff ? w[3] : undefined;
  if (v4 !== undefined && v4 !== 0) return `${v4 >>> 24}.${(v4 >>> 16) & 255}.${(v4 >>> 8) & 255}.${v4 & 255}`;
  if (w.some((x) => x !== 0)) return undefined; // a real IPv6 peer: not an IPv4 agent's concern
  const host = cString(buf, at + UT_HOST, 256);
  return isIPv4(host) ? host : undefined;
}

/**
 * The logged-in sessions with a remote IPv4 address in a utmp file's bytes.
 * Only USER_PROCESS records count: a login that has not authenticated (a
 * password-guessing bot) has none, and a closed session is DEAD_PROCESS. A
 * trailing partial record is ignored.
 */
export function parseUtmp(bytes: Uint8Array): UtmpSession[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: UtmpSession[] = [];
  for (let at = 0; at + UTMP_RECORD_SIZE <= bytes.length; at += UTMP_RECORD_SIZE) {
    if (view.getInt16(at + UT_TYPE, true) !== USER_PROCESS) continue;
    const address = addressOf(view, bytes, at);
    if (address === undefined) continue;
    out.push({ user: cString(bytes, at + UT_USER, 32), line: cString(bytes, at + UT_LINE, 32), pid: view.getInt32(at + UT_PID, true), address });
  }
  return out;
}

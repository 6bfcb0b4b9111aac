import { ApiResponseError, ApiStatusError, ApiUnreachableError } from '../errors.js';
import { escapeControls } from '../util/terminal-text.js';

const NETWORK_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH',
  'CONNECT_TIMEOUT', 'HEADERS_TIMEOUT', 'BODY_TIMEOUT', 'ERR_PROXY_TUNNEL', 'ERR_PROXY_INVALID_CONFIG',
]);

/** The first `code` along the error's cause chain (a few levels: errors can wrap others) that `wanted` accepts. */
function codeInChain(err: unknown, wanted: (code: string) => boolean): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 4 && e && typeof e === 'object'; i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && wanted(code)) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

function errorCodeOf(err: unknown): string | undefined {
  return codeInChain(err, (c) => NETWORK_CODES.has(c));
}

/**
 * OpenSSL/Node codes of a certificate the agent does not trust. Not transient: retrying
 * only delays the error, so these fail at once, with a hint (ca_file, the server's name).
 */
const TLS_VERIFY_CODES = /^(ERR_TLS_CERT_ALTNAME_INVALID|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?|CERT_HAS_EXPIRED|CERT_NOT_YET_VALID|CERT_UNTRUSTED|CERT_REJECTED|CERT_SIGNATURE_FAILURE|INVALID_CA|HOSTNAME_MISMATCH)$/;

export function tlsVerifyCode(err: unknown): string | undefined {
  return codeInChain(err, (c) => TLS_VERIFY_CODES.test(c));
}

/** The cycle's deadline passed: not retried (the cycle is over), unlike a single slow request. */
export class CycleDeadlineError extends ApiUnreachableError {}

export function isRetryable(err: unknown): boolean {
  if (err instanceof CycleDeadlineError) return false;
  if (err instanceof ApiUnreachableError) return tlsVerifyCode(err) === undefined;
  if (err instanceof ApiStatusError) return err.status >= 500 || err.status === 429;
  // Truncated or garbled bodies are usually a transient proxy/server problem.
  if (err instanceof ApiResponseError) return err.retryable;
  return false;
}

/** The server's `message` field, control characters escaped (it goes to terminals, logs and state.json). */
export function serverMessage(text: string): string | undefined {
  try {
    const j = JSON.parse(text) as { message?: unknown };
    if (typeof j.message === 'string') return escapeControls(j.message.slice(0, 200));
  } catch {
    /* not JSON: no message to show */
  }
  return undefined;
}

export function describeNetworkError(err: unknown): string {
  const code = errorCodeOf(err);
  const msg = err instanceof Error ? err.message : String(err);
  return escapeControls(code && !msg.includes(code) ? `${code}: ${msg}` : msg);
}

/**
 * A 304 with no answer kept to stand for it: the request sent no validator (a cache in front of
 * the API answering as if for another client), or the answer its validator named has been
 * dropped since. Nothing is taken as "unchanged"; retried, and a retry sends no validator.
 */
export function notModifiedUnkept(where: string, sentValidators: boolean): ApiResponseError {
  const why = sentValidators ? 'the answer its validator named is no longer kept' : 'this request sent no validator';
  return new ApiResponseError(`${where}: the server answered 304 Not Modified, but no earlier answer is kept to stand for it (${why}); a cache or proxy in front of the API may be answering for another request`, {
    retryable: true,
  });
}

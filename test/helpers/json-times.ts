/**
 * Times in the CLI's JSON are whole epoch seconds. This finds the ones that are not: any number in
 * the range of an epoch time in seconds (2001..5138) that has a fraction, and any number under a
 * key that names a time (`ts`, `expires`, `created`, `..._at`, `last_...`, `next_...`) that is not
 * a whole number. Answers their JSON paths with the value.
 */
const TIME_KEY = /^(ts|expires|created|since|next_ts|feed_as_of|cursor)$|_at$|^(last|next)_/;

export function fractionalTimes(value: unknown, path = '$'): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => fractionalTimes(v, `${path}[${i}]`));
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => fractionalTimes(v, `${path}.${k}`, ).concat(timeKeyProblem(k, v, `${path}.${k}`)));
  if (typeof value === 'number' && value >= 1e9 && value < 1e11 && !Number.isInteger(value)) return [`${path}: ${value}`];
  return [];
}

function timeKeyProblem(key: string, value: unknown, path: string): string[] {
  if (!TIME_KEY.test(key) || typeof value !== 'number' || Number.isInteger(value)) return [];
  // The epoch-range check above already named it.
  return value >= 1e9 && value < 1e11 ? [] : [`${path}: ${value}`];
}

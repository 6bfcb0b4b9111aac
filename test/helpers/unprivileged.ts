import { execa } from 'execa';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from './cli.js';

/**
 * Run as `nobody` (65534), with no supplementary groups and no capabilities: root
 * bypasses file permissions, so a permission check only means something when it runs
 * unprivileged. setpriv ships with util-linux; the test creates no account.
 */
export const NOBODY = 65534;
export const AS_NOBODY = ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups'];

/** Call `fn` (a named export of a src/ module, given its path from the repo root) with `args`, as nobody; its JSON result. */
export async function callAsNobody<T>(module: string, fn: string, args: unknown[]): Promise<T> {
  const url = pathToFileURL(join(ROOT, module)).href;
  const code = `import { ${fn} } from ${JSON.stringify(url)}; console.log(JSON.stringify(await ${fn}(...JSON.parse(process.argv[1]))));`;
  const [file, ...rest] = AS_NOBODY;
  const r = await execa(file!, [...rest, process.execPath, '--import', 'tsx', '--input-type=module', '-e', code, JSON.stringify(args)], { cwd: ROOT });
  return JSON.parse(r.stdout) as T;
}

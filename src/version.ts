// Kept equal to package.json "version" (a unit test checks): the single binary has no package.json to read.
export const AGENT_VERSION = '0.1.0';

// Set by scripts/bundle.mjs (esbuild's define) to the commit the build was made from; absent when
// the sources run unbundled (tsx), where the commit is the checkout's own.
declare const __WCF_BUILD_COMMIT__: string | undefined;

/** The git commit this build was made from (`unknown` outside a git checkout, or unbundled). */
export const BUILD_COMMIT: string = typeof __WCF_BUILD_COMMIT__ === 'string' && __WCF_BUILD_COMMIT__ ? __WCF_BUILD_COMMIT__ : 'unknown';

/** `wcf-agent --version`, and the first line of `wcf-agent version`: one line a bug report can quote. */
export function versionLine(): string {
  return `wcf-agent ${AGENT_VERSION} (commit ${BUILD_COMMIT.slice(0, 12)}, Node ${process.version})`;
}

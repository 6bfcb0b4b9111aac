// Kept equal to package.json "version" (a unit test checks): the single binary has no package.json to read.
export const AGENT_VERSION = '0.1.0';

// Set by scripts/bundle.mjs (esbuild's define) to the commit the build was made from; absent when
// the sources run unbundled (tsx), where the commit is the checkout's own.
declare const __WCF_BUILD_COMMIT__: string | undefined;

/** The git commit this build was made from (`unknown` outside a git checkout, or unbundled). */
export const BUILD_COMMIT: string = typeof __WCF_BUILD_COMMIT__ === 'string' && __WCF_BUILD_COMMIT__ ? __WCF_BUILD_COMMIT__ : 'unknown';

// Set by scripts/build-binary.sh to the SHA-256 of the single executable's SBOM (the bundle holds a
// placeholder until the SBOM, which lists what the bundle holds, is written); absent elsewhere.
declare const __WCF_SBOM_SHA256__: string | undefined;

/** The SHA-256 of the CycloneDX SBOM that describes this build, or null when it was built without one (npm run build, tsx). */
export const SBOM_SHA256: string | null =
  typeof __WCF_SBOM_SHA256__ === 'string' && /^[0-9a-f]{64}$/.test(__WCF_SBOM_SHA256__) ? __WCF_SBOM_SHA256__ : null;

/**
 * Where that SBOM is: beside the executable as the build leaves it (dist/wcf-agent-linux-x64.cdx.json),
 * else where the .deb, the RPM and the image install it.
 */
export function sbomPaths(execPath: string): string[] {
  return [`${execPath}.cdx.json`, '/usr/share/doc/wcf-agent/sbom.cdx.json'];
}

/** `wcf-agent --version`, and the first line of `wcf-agent version`: one line a bug report can quote. */
export function versionLine(): string {
  return `wcf-agent ${AGENT_VERSION} (commit ${BUILD_COMMIT.slice(0, 12)}, Node ${process.version})`;
}

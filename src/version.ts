// Kept equal to package.json "version" (a unit test checks): the single binary has no package.json to read.
export const AGENT_VERSION = '0.1.0';

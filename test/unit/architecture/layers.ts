/**
 * The layers of src/, lowest first. A file may import from its own room and from rooms
 * below it, never from a room above or beside it: the generic helpers know nothing of the
 * agent, config validates shapes without knowing the firewall, a backend never reaches into
 * the core, and the cycle, the daemon and the read-only views build on what is saved. The
 * host's facts (addresses, routes) are read with the firewall's own tools, so host sits above
 * the backends.
 */
export const LAYERS: readonly (readonly string[])[] = [
  ['util'],
  ['errors.ts', 'log-journal.ts', 'version.ts', 'node-version.ts'],
  ['log.ts'],
  ['net'],
  ['exec'],
  ['score'],
  ['config'],
  ['api'],
  ['feed'],
  ['policy'],
  ['firewall', 'dns'],
  ['host'],
  ['agent/state'],
  ['agent/cycle'],
  ['agent/inspect', 'agent/daemon'],
  ['metrics'],
  ['cli'],
  ['cli.ts'],
];

/** The room a src/ file belongs to: its top folder (agent: its sub-folder), or the file itself at the top. */
export function roomOf(file: string): string {
  const parts = file.split('/');
  if (parts.length === 1) return parts[0]!;
  if (parts[0] === 'agent' && parts.length > 2) return `agent/${parts[1]}`;
  return parts[0]!;
}

export function layerOf(room: string): number {
  const i = LAYERS.findIndex((rooms) => rooms.includes(room));
  if (i < 0) throw new Error(`${room}: not in the layer list of test/unit/architecture/layers.ts`);
  return i;
}

/** Imports that go up or sideways, as `from -> to`. */
export function wrongWayImports(graph: Map<string, string[]>): string[] {
  const wrong: string[] = [];
  for (const [from, targets] of graph) {
    const a = roomOf(from);
    for (const to of targets) {
      const b = roomOf(to);
      if (a === b) continue;
      if (layerOf(b) >= layerOf(a)) wrong.push(`${from} -> ${to}`);
    }
  }
  return wrong.sort();
}

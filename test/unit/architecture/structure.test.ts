import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importCircles, srcImports } from './imports.js';
import { LAYERS, layerOf, roomOf, wrongWayImports } from './layers.js';

const SRC = join(import.meta.dirname, '../../../src');
/** About 300 lines: one concern a file. */
const MAX_LINES = 320;
/** Files of its own a folder may hold before it wants rooms. */
const MAX_FILES = 20;

describe("the code's structure, read from its own imports", () => {
  const graph = srcImports(SRC);

  it('reads a real graph (the checks below are not vacuous)', () => {
    expect(graph.size).toBeGreaterThan(150);
    expect(graph.get('agent/cycle/cycle.ts')).toContain('agent/cycle/types.ts');
    expect(graph.get('cli/commands/run.ts')?.length).toBeGreaterThan(3);
  });

  it('has no import circle, type-only imports included', () => {
    expect(importCircles(graph)).toEqual([]);
  });

  it('finds a circle when there is one (the detector itself)', () => {
    const g = new Map([['a.ts', ['b.ts']], ['b.ts', ['c.ts']], ['c.ts', ['a.ts']], ['d.ts', ['a.ts']]]);
    expect(importCircles(g)).toEqual([['a.ts', 'b.ts', 'c.ts']]);
  });

  it('imports only from its own room or a room below it', () => {
    expect(wrongWayImports(graph)).toEqual([]);
  });

  it('refuses an import that goes up or sideways (the layer check itself)', () => {
    const g = new Map([
      ['config/load.ts', ['firewall/index.ts', 'net/ipv4.ts']],
      ['dns/exec.ts', ['firewall/exec.ts']],
      ['agent/state/store.ts', ['agent/cycle/types.ts']],
    ]);
    expect(wrongWayImports(g)).toEqual(['agent/state/store.ts -> agent/cycle/types.ts', 'config/load.ts -> firewall/index.ts', 'dns/exec.ts -> firewall/exec.ts']);
  });

  it('places every room of src/ in the layer list', () => {
    const rooms = new Set([...graph.keys()].map(roomOf));
    for (const room of rooms) expect(() => layerOf(room), room).not.toThrow();
    expect(LAYERS.flat().filter((r) => !rooms.has(r))).toEqual([]);
  });

  it(`keeps every file under ~${MAX_LINES} lines and every folder under ${MAX_FILES} files of its own`, () => {
    const long: string[] = [];
    const crowded: string[] = [];
    const walk = (dir: string): void => {
      const names = readdirSync(dir);
      const own = names.filter((n) => n.endsWith('.ts'));
      if (own.length > MAX_FILES) crowded.push(`${relative(SRC, dir) || 'src'}: ${own.length} files`);
      for (const n of own) {
        const lines = readFileSync(join(dir, n), 'utf8').split('\n').length;
        if (lines > MAX_LINES) long.push(`${relative(SRC, join(dir, n))}: ${lines} lines`);
      }
      for (const n of names) if (statSync(join(dir, n)).isDirectory()) walk(join(dir, n));
    };
    walk(SRC);
    expect(long).toEqual([]);
    expect(crowded).toEqual([]);
  });
});

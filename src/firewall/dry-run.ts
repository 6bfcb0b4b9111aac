import { access, mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { FirewallError, errorMessage } from '../errors.js';
import { directionHooks } from './direction.js';
import { diffEntries } from './diff.js';
import { columnsToMap, listingColumns, normalizeEntries, sortCidrTexts } from './entries.js';
import type { EntryColumns, FirewallEntries } from './entry-columns.js';
import { ipsetSizing, parseIpsetSave, renderIpsetCreate, writeIpsetAdds } from './ipset/text.js';
import { resolveNetOverlaps } from './nft/overlaps.js';
import { writeNftTable } from './nft/table/build.js';
import { nftLayout, parseNftScriptElements } from './nft/text.js';
import { TextBuilder } from '../util/text-builder.js';
import type { ApplyOptions, ApplyResult, DropCounters, FirewallPlugin, HitCounter, OwnedObject, PluginOptions } from './plugin.js';
import { iptablesSetRules } from './xtables/rules.js';

/** Where dry-run writes when the options name no file. */
export function defaultDryRunOutput(format: 'ipset' | 'nft'): string {
  return join(tmpdir(), `wcf-agent-dry-run.${format}`);
}

const HEADER_RE = /^# wcf-agent dry-run .*\(epoch (\d+)\)/m;

/**
 * Dry-run backend: renders what the ipset or nftables backend would load
 * (same rendering code) into a file, or to stdout for `-`. Runs no command and
 * touches no kernel state; the file is the only record of what it "applied"
 * (`list()` parses it back). Files are written atomically (temp file in the
 * same directory + rename), so a reader never sees half a ruleset.
 */
export class DryRunPlugin implements FirewallPlugin {
  readonly name = 'dry-run' as const;
  private readonly output: string;
  private readonly format: 'ipset' | 'nft';
  private readonly log: Logger;
  /** What was last written to stdout (`-`), which cannot be read back. */
  private memory: string | undefined;

  constructor(private readonly options: PluginOptions) {
    this.format = options.dryRunFormat ?? 'ipset';
    this.output = options.dryRunOutput ?? defaultDryRunOutput(this.format);
    this.log = options.logger;
  }

  private render(entries: EntryColumns, now: number, capacity: number): string {
    const { names } = this.options;
    const t = new TextBuilder();
    const line = (text: string) => t.str(text).byte(10);
    line(`# wcf-agent dry-run ${new Date(now * 1000).toISOString()} (epoch ${now}): ${entries.length} entries, nothing applied to the kernel`);
    if (this.format === 'nft') {
      line(`add table inet ${names.tableName}`);
      line(`delete table inet ${names.tableName}`);
      writeNftTable(t, nftLayout(this.options), entries);
      t.byte(10);
    } else {
      const direction = this.options.direction ?? 'both';
      line('# iptables rules that would use the set (iptables-restore --noflush, table filter):');
      line(`#   :${names.chainName} - [0:0]`);
      for (const r of iptablesSetRules(names.chainName, names.setName, this.options.action, this.options.logBlocked, direction)) line(`#   ${r}`);
      for (const h of directionHooks(this.options.hookChains, direction)) line(`#   -I ${h} 1 -j ${names.chainName}`);
      line(`${renderIpsetCreate(names.setName, ipsetSizing(capacity, entries.length))} -exist`);
      line(`flush ${names.setName}`);
      writeIpsetAdds(t, names.setName, entries);
    }
    return t.toString();
  }

  /** What the last write held: CIDR -> seconds left now (undefined = permanent). */
  private async readBack(): Promise<Map<string, number | undefined>> {
    let text: string;
    if (this.output === '-') {
      if (!this.memory) return new Map();
      text = this.memory;
    } else {
      try {
        text = await readFile(this.output, 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
        throw new FirewallError(`cannot read dry-run output ${this.output}: ${errorMessage(err)}`, { cause: err });
      }
    }
    const entries = this.format === 'nft' ? parseNftScriptElements(text) : columnsToMap(parseIpsetSave(text, this.options.names.setName).entries);
    // Timeouts in the file count from when it was written.
    const written = Number(HEADER_RE.exec(text)?.[1] ?? NaN);
    const elapsed = Number.isFinite(written) ? Math.max(0, Math.floor(Date.now() / 1000) - written) : 0;
    const out = new Map<string, number | undefined>();
    for (const [cidr, t] of entries) {
      if (t === undefined) out.set(cidr, undefined);
      else if (t > elapsed) out.set(cidr, t - elapsed); // expired entries are gone, as in the kernel
    }
    return out;
  }

  private async write(text: string): Promise<void> {
    if (this.output === '-') {
      await new Promise<void>((resolve, reject) => process.stdout.write(text, (err) => (err ? reject(err) : resolve())));
      return;
    }
    const tmp = `${this.output}.tmp-${process.pid}-${Date.now()}`;
    try {
      await mkdir(dirname(this.output), { recursive: true });
      await writeFile(tmp, text, { mode: 0o644 });
      await rename(tmp, this.output);
    } catch (err) {
      await unlink(tmp).catch(() => undefined);
      throw new FirewallError(`cannot write dry-run output ${this.output}: ${errorMessage(err)}`, { cause: err });
    }
  }

  async apply(entries: FirewallEntries, options: ApplyOptions): Promise<ApplyResult> {
    const normalized = normalizeEntries(entries);
    const wanted = this.format === 'nft' ? resolveNetOverlaps(normalized) : normalized;
    const previous = await this.readBack();
    const diff = diffEntries(listingColumns(previous), wanted);
    const now = Math.floor(Date.now() / 1000);
    const text = this.render(wanted, now, options.capacity);
    await this.write(text);
    if (this.output === '-') this.memory = text;
    const changed = diff.added + diff.removed + diff.updated > 0;
    this.log.info({ output: this.output, format: this.format, entries: wanted.length, added: diff.added, removed: diff.removed }, 'dry-run: ruleset rendered, nothing applied');
    return { added: diff.added, removed: diff.removed, updated: diff.updated, mode: changed ? 'full' : 'none', repaired: [] };
  }

  async list(): Promise<string[]> {
    return sortCidrTexts((await this.readBack()).keys());
  }

  async flush(): Promise<void> {
    this.memory = undefined;
    if (this.output === '-') return;
    try {
      await unlink(this.output);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new FirewallError(`cannot remove dry-run output ${this.output}: ${errorMessage(err)}`, { cause: err });
      }
    }
  }

  /** Nothing is enforced, so nothing is dropped. */
  async readCounters(): Promise<DropCounters> {
    return { packets: 0, bytes: 0 };
  }

  /** Nothing reaches a rendered file. */
  async readHits(): Promise<HitCounter[]> {
    return [];
  }

  /** The output file stands for the objects (stdout has none). */
  async objects(): Promise<OwnedObject[]> {
    if (this.output === '-') return [];
    const what = `dry-run output ${this.output}`;
    try {
      await access(this.output);
      return [{ what, state: 'present' }];
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [{ what, state: 'absent' }];
      return [{ what, state: 'unreadable', error: errorMessage(err) }];
    }
  }
}

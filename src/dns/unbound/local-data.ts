import { selfAndParents } from '../../feed/host.js';
import { BLOCK_TTL } from '../render.js';

/** One line of `unbound-control list_local_data`: `owner.<TAB>ttl<TAB>IN<TAB>type<TAB>rdata`. */
interface LocalRecord {
  owner: string;
  ttl: number;
  type: string;
  /** The line as unbound printed it: what `local_datas` takes back. */
  line: string;
}

function parseLocalData(text: string): LocalRecord[] {
  const out: LocalRecord[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    const m = /^(\S+?)\.?\s+(\d+)\s+IN\s+(\S+)\s/.exec(line);
    if (m) out.push({ owner: m[1]!.toLowerCase(), ttl: Number(m[2]), type: m[3]!.toUpperCase(), line });
  }
  return out;
}

/**
 * Someone else's `local-data` around the names the agent blocks or wants to block, from
 * `list_local_data` and `list_local_zones`.
 *
 * unbound puts a record into the closest local zone above it. At its start that can be an
 * agent's zone (an administrator's `local-data: "www.evil.test. A ..."` lands in the agent's
 * `evil.test` zone), and removing the zone deletes the record with it until unbound restarts;
 * below a sinkhole (a `redirect` zone) unbound even refuses to start. So a name that carries
 * someone else's data, at it or below it, is not the agent's to block, and when one of the
 * agent's zones is removed, the records inside it that are not the agent's are put back.
 *
 * The agent's own records are its sinkhole answers: A or AAAA at one of its zones' own name,
 * with the agent's TTL.
 */
export class LocalDataView {
  /** name -> the first record of someone else's at it or below it, as unbound printed it. */
  private readonly carrying = new Map<string, string>();
  private readonly inside = new Map<string, string[]>();

  /**
   * @param text `list_local_data` output
   * @param zones the running zones (`list_local_zones`)
   * @param agentZones names of the agent's zones now in unbound
   * @param names every name the caller will ask about
   */
  constructor(text: string, zones: ReadonlyMap<string, string>, agentZones: ReadonlySet<string>, names: ReadonlySet<string>) {
    for (const r of parseLocalData(text)) {
      if (agentZones.has(r.owner) && r.ttl === BLOCK_TTL && (r.type === 'A' || r.type === 'AAAA')) continue;
      let closest: string | undefined;
      for (const p of selfAndParents(r.owner)) {
        if (names.has(p) && !this.carrying.has(p)) this.carrying.set(p, r.line);
        if (closest === undefined && zones.has(p)) closest = p;
      }
      if (closest !== undefined && agentZones.has(closest)) {
        const list = this.inside.get(closest) ?? [];
        list.push(r.line);
        this.inside.set(closest, list);
      }
    }
  }

  /** Someone else's record at `name` or below it (the first one), undefined when none. */
  foreignDataAt(name: string): string | undefined {
    return this.carrying.get(name);
  }

  /** Someone else's records held by the agent's zone `name` (put back when it is removed). */
  foreignInside(name: string): readonly string[] {
    return this.inside.get(name) ?? [];
  }
}

/**
 * Control routes for out-of-process use (demo, CLI tests). Same token as the API.
 * Thin wrappers over the programmatic API:
 *
 * | route | body / query | effect |
 * |---|---|---|
 * | POST /_sim/fault | `{mode: FaultMode \| null, ...FaultOptions}` | setFault |
 * | POST /_sim/clock | `{advance: s}` or `{set: epoch}` | answers `{now}` (GET too) |
 * | POST /_sim/indicators | `{ip, score?, ts?, is_network?, gid?, decision?, ttl?}` | upsertIndicator (+ setDecision) |
 * | DELETE /_sim/indicators?ip= | | removeIndicator |
 * | POST /_sim/decision | `{ip, decision, ttl?}` | setDecision |
 * | POST /_sim/urls | `{url, score?, ts?, tags?}` | upsertUrl |
 * | POST /_sim/files | `{md5?, sha1?, sha256?, score?, tags?, deep?}` | addFile |
 * | POST /_sim/agent-config?agid= | config values (verbatim) | setAgentConfig (agid defaults to the simulator's) |
 * | GET /_sim/agents?agid= | | the record (404 if none) |
 * | DELETE /_sim/agents?agid= | | deleteAgent |
 * | POST /_sim/deleted-agent-response | `{mode: '404' \| 'empty'}` | |
 * | GET /_sim/reports, /_sim/requests, /_sim/stats, /_sim/data | | read-only views |
 */
import type { Simulator } from './index.js';

type Result = { status: number; value: unknown };
const done = (value: unknown = {}): Result => ({ status: 200, value });
const bad = (message: string): Result => ({ status: 400, value: { message } });

function obj(body: unknown): Record<string, unknown> {
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
}

export function controlHandler(sim: Simulator) {
  return (method: string, route: string, q: URLSearchParams, body: unknown): Result => {
    const b = obj(body);
    try {
      switch (`${method} ${route}`) {
        case 'POST /fault': {
          const { mode, ...options } = b;
          sim.setFault((mode ?? null) as never, options as never);
          return done();
        }
        case 'GET /clock':
          return done({ now: sim.clock.now() });
        case 'POST /clock':
          if (typeof b.set === 'number') sim.clock.set(b.set);
          else if (typeof b.advance === 'number') sim.clock.advance(b.advance);
          else return bad('clock: give {advance: seconds} or {set: epoch}');
          return done({ now: sim.clock.now() });
        case 'POST /indicators': {
          if (typeof b.ip !== 'string') return bad('ip: required');
          // The decision first: it re-stamps the record, which the given fields (ts too) then set.
          if (b.decision !== undefined) sim.setDecision(b.ip, b.decision as never, b.ttl as never);
          sim.upsertIndicator(b as never);
          return done();
        }
        case 'DELETE /indicators':
          sim.removeIndicator(q.get('ip') ?? '');
          return done();
        case 'POST /decision':
          sim.setDecision(String(b.ip), b.decision as never, b.ttl as never);
          return done();
        case 'POST /urls':
          if (typeof b.url !== 'string') return bad('url: required');
          sim.upsertUrl(b.url, b as never);
          return done();
        case 'POST /files':
          return done(sim.addFile(b as never));
        case 'POST /agent-config':
          sim.setAgentConfig(q.get('agid') ?? sim.agid, b as never);
          return done();
        case 'GET /agents': {
          const rec = sim.getAgent(q.get('agid') ?? sim.agid);
          return rec ? done(rec) : { status: 404, value: { message: 'agent not found' } };
        }
        case 'DELETE /agents':
          sim.deleteAgent(q.get('agid') ?? sim.agid);
          return done();
        case 'POST /deleted-agent-response':
          sim.setDeletedAgentResponse(b.mode as never);
          return done();
        case 'GET /reports':
          return done(sim.reports);
        case 'GET /requests':
          return done(sim.requests);
        case 'GET /stats':
          return done(sim.stats());
        case 'GET /data':
          return done({ count: sim.data.count, start: sim.data.start, ownGid: sim.data.ownGid, sameTsRuns: sim.data.sameTsRuns });
      }
      return { status: 404, value: { message: 'not found' } };
    } catch (e) {
      return bad(e instanceof Error ? e.message : String(e));
    }
  };
}

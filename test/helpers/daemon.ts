import type { ResultPromise } from 'execa';
import { spawnCli, waitFor } from './cli.js';

export interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

/** `wcf-agent run` as a child process, with its JSON log lines collected. */
export class DaemonProcess {
  readonly logs: LogLine[] = [];
  readonly raw: string[] = [];
  private readonly child: ResultPromise;
  private exited: number | null | undefined;
  /** The signal that ended the process, if one did. */
  signalled: string | undefined;

  constructor(configPath: string, env: Record<string, string> = {}, prefix: string[] = [], args: string[] = []) {
    this.child = spawnCli(['run', '--config', configPath, ...args], { WCF_AGENT_MINUTE_MS: '100', ...env }, prefix);
    let buf = '';
    this.child.stderr!.on('data', (d: Buffer) => {
      buf += d.toString('utf8');
      let nl: number;
      while ((nl = buf.indexOf('\n')) !== -1) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        this.raw.push(line);
        try {
          this.logs.push(JSON.parse(line) as LogLine);
        } catch {
          this.logs.push({ level: 0, msg: line });
        }
      }
    });
    void this.child.then((r) => {
      this.exited = r.exitCode ?? null;
      this.signalled = r.signal;
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  count(pattern: RegExp): number {
    return this.logs.filter((l) => pattern.test(l.msg)).length;
  }

  /** Wait until `n` log lines (in total) match. */
  async waitForLog(pattern: RegExp, n = 1, timeoutMs = 20_000): Promise<LogLine> {
    return waitFor(() => {
      // The lines first: a daemon that logged the line and then exited between two polls still counts.
      const hits = this.logs.filter((l) => pattern.test(l.msg));
      if (hits.length >= n) return hits[n - 1];
      if (this.exited !== undefined) throw new Error(`daemon exited (${this.exited}) while waiting for ${pattern}:\n${this.raw.slice(-20).join('\n')}`);
      return undefined;
    }, `log ${pattern} x${n}`, timeoutMs);
  }

  signal(sig: NodeJS.Signals): void {
    this.child.kill(sig);
  }

  /** Resolves with the exit code (signal exits give null). */
  async exit(): Promise<number | null> {
    const r = await this.child;
    return r.exitCode ?? null;
  }

  async stop(): Promise<number | null> {
    if (this.exited === undefined) this.child.kill('SIGTERM');
    return this.exit();
  }
}

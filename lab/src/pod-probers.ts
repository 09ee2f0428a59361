/**
 * The probers of a lab test's pods (pod-prober.ts): started on a pod's first echo check, asked for each
 * echo after it, ended with the checks. A prober that dies fails the checks it had in flight, naming its
 * exit, and the next check of that pod starts another.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { EchoMode, EchoResult } from './echo-client';
import { podNetns } from './names';
import type { ProbeAnswer, ProbeRequest } from './pod-prober';

const proberScript = join(__dirname, 'pod-prober.js');

interface Pending {
  resolve: (r: EchoResult) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

/** One pod's prober process and the requests it has not answered yet. */
class PodProber {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly pending = new Map<number, Pending>();
  private stderr = '';
  private nextId = 0;

  constructor(
    readonly pod: string,
    onExit: () => void,
  ) {
    this.child = spawn('ip', ['netns', 'exec', podNetns(pod), process.execPath, proberScript]);
    this.child.stderr.on('data', (d: Buffer) => {
      this.stderr = (this.stderr + d.toString()).slice(-2000);
    });
    createInterface({ input: this.child.stdout }).on('line', (line) => this.answered(line));
    // The exit of the process (or its failure to start): whatever it had in flight fails.
    const gone = (why: string) => {
      onExit();
      this.failAll(`the prober of ${pod} ${why}${this.stderr.trim() ? `: ${this.stderr.trim()}` : ''}`);
    };
    this.child.on('error', (err) => gone(`could not start (${err.message})`));
    // A prober that died takes our next write with EPIPE: what it had in flight fails by its exit, above.
    this.child.stdin.on('error', () => {});
    // 'close', not 'exit': after its stderr is read to the end, so the reason it gives is in the message.
    this.child.on('close', (code, signal) => gone(`exited (${signal ?? `code ${code}`})`));
  }

  echo(mode: EchoMode, to: string, port: number, waitMs: number, timeoutMs: number, learnsPathMtu?: boolean): Promise<EchoResult> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      // The probe's own wait settles it first; this bounds a prober that is slow to start or stuck.
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`the prober of ${this.pod} gave no answer in ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      const request: ProbeRequest = { id, mode, to, port, waitMs, ...(learnsPathMtu ? { learnsPathMtu } : {}) };
      this.child.stdin.write(`${JSON.stringify(request)}\n`);
    });
  }

  close(): void {
    this.child.stdin.end();
  }

  private answered(line: string): void {
    let answer: ProbeAnswer | { id?: number; error: string };
    try {
      answer = JSON.parse(line) as typeof answer;
    } catch {
      return this.failAll(`the prober of ${this.pod} wrote ${JSON.stringify(line.slice(0, 80))}, not an answer`);
    }
    const { id } = answer;
    if (typeof id !== 'number' || id >= this.nextId)
      return this.failAll(`the prober of ${this.pod} answered ${JSON.stringify(line.slice(0, 120))}, no request of ours`);
    const pending = this.pending.get(id);
    // The answer to a request that timed out: its check has failed already.
    if (!pending) return;
    this.pending.delete(id);
    clearTimeout(pending.timer);
    const { id: _, ...result } = answer;
    if ('mode' in result) pending.resolve(result);
    else pending.reject(new Error(`the prober of ${this.pod} refused the request: ${answer.error}`));
  }

  private failAll(why: string): void {
    for (const { reject, timer } of this.pending.values()) {
      clearTimeout(timer);
      reject(new Error(why));
    }
    this.pending.clear();
  }
}

/** The probers of the pods checked so far; `close` ends them all. */
export class PodProbers {
  private readonly probers = new Map<string, PodProber>();

  /** One echo from `pod`; rejects when its prober could not run it (the path's verdict is in the result). */
  echo(
    pod: string,
    mode: EchoMode,
    to: string,
    port: number,
    waitMs: number,
    timeoutMs: number,
    learnsPathMtu?: boolean,
  ): Promise<EchoResult> {
    let prober = this.probers.get(pod);
    if (!prober) {
      const started: PodProber = new PodProber(pod, () => {
        if (this.probers.get(pod) === started) this.probers.delete(pod);
      });
      prober = started;
      this.probers.set(pod, prober);
    }
    return prober.echo(mode, to, port, waitMs, timeoutMs, learnsPathMtu);
  }

  close(): void {
    for (const prober of this.probers.values()) prober.close();
    this.probers.clear();
  }
}

/**
 * Probes nodes' datapaths (wire.ts) from one network namespace and keeps a verdict per node
 * (detection.ts), reporting each change. The imperative shell: a UDP socket of the native binding (it
 * opens in the node's namespace, where a Node.js socket cannot) and a timer. One request per
 * target per interval; a send the kernel refuses (no route yet) is a probe unanswered.
 */
import { randomInt } from 'node:crypto';
import { native } from '../native/binding';
import type { Datagram } from '../native/binding';
import { type Detection, type DetectionSettings, type Verdict, judge, observeReply, startDetection } from './detection';
import { ProbeState, livenessPort, probeRequest, readProbeReply } from './wire';

export interface ProberOptions extends DetectionSettings {
  /** The namespace probes leave from (a path, /run/netns/NAME); default: the process's. */
  netns?: string;
  /** Where probes go; default livenessPort. */
  port?: number;
  /** Called after a round that changed verdicts, with every target's (name → verdict). */
  onChange?: (verdicts: ReadonlyMap<string, Verdict>) => void;
}

interface Target {
  address: string;
  detection: Detection;
}

export class Prober {
  private readonly socket: number;
  private readonly session = randomInt(1, 2 ** 32 - 1);
  private readonly targets = new Map<string, Target>();
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;

  /** Throws a SocketError (or NetnsError) when the socket cannot be opened. */
  constructor(private readonly options: ProberOptions) {
    this.socket = native().udpSocketOpen(options.netns ?? null, (datagrams) => this.receive(datagrams));
  }

  /** Probes these nodes (name → address) from now on; a node kept keeps its verdict. */
  setTargets(targets: ReadonlyMap<string, string>): void {
    for (const name of [...this.targets.keys()]) if (!targets.has(name)) this.targets.delete(name);
    for (const [name, address] of targets) {
      const known = this.targets.get(name);
      if (known?.address === address) continue;
      this.targets.set(name, { address, detection: startDetection() });
    }
  }

  verdicts(): Map<string, Verdict> {
    return new Map([...this.targets].map(([name, t]) => [name, t.detection.verdict]));
  }

  /** Starts probing every interval; the timer does not keep the process alive. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.round(), this.options.intervalMs);
    this.timer.unref();
    this.round();
  }

  /**
   * One round: read the replies already there, judge, then send the next request to every target. The
   * replies are read first because after the event loop was held up (a long apply, a pause) timers run
   * before sockets are polled: judged first, every target would look silent for as long as the hold-up.
   */
  round(): void {
    this.receive(native().udpSocketReceive(this.socket));
    const changed: string[] = [];
    for (const [name, t] of this.targets) {
      const judged = judge(t.detection, this.seq, this.options);
      if (judged !== t.detection && judged.verdict !== t.detection.verdict) changed.push(name);
      t.detection = judged;
    }
    this.seq = (this.seq + 1) >>> 0;
    const request = probeRequest(this.session, this.seq);
    for (const t of this.targets.values()) {
      try {
        native().udpSocketSend(this.socket, t.address, this.options.port ?? livenessPort, request);
      } catch {
        // No route yet, a full buffer: a probe unanswered, which is what detection counts.
      }
    }
    if (changed.length > 0) this.options.onChange?.(this.verdicts());
  }

  private receive(datagrams: Datagram[]): void {
    for (const d of datagrams) {
      const reply = readProbeReply(d.data);
      if (!reply || reply.session !== this.session) continue;
      for (const t of this.targets.values()) {
        if (t.address !== d.address) continue;
        t.detection = observeReply(t.detection, reply.seq, this.seq, reply.state === ProbeState.Ready, this.options);
      }
    }
  }

  /** Stops probing and closes the socket. Safe to call twice. */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    native().udpSocketClose(this.socket);
  }
}

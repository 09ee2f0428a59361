/**
 * ping(8) as a probe: how many echo requests went out and how many replies came back, read from its
 * statistics line. ping exits 0 with replies, 1 with none (or fewer than asked before a deadline), 2 on
 * any other error: only 0 and 1 are answers about the path; anything else is a failure of the probe.
 */
export interface PingCount {
  transmitted: number;
  received: number;
}

/** The counts of ping's summary, or undefined when it printed none (it did not run, or failed early). */
function pingStatistics(output: string): PingCount | undefined {
  const m = /(\d+) packets transmitted, (\d+) (?:packets )?received/.exec(output);
  return m ? { transmitted: Number(m[1]), received: Number(m[2]) } : undefined;
}

/** The counts of a finished ping, or an error naming what went wrong when it is not an answer. */
function pingOutcome(exitCode: number, stdout: string, stderr: string): PingCount {
  const counts = pingStatistics(stdout);
  if ((exitCode === 0 || exitCode === 1) && counts) return counts;
  throw new Error(`ping did not give an answer (exit ${exitCode}): ${(stderr || stdout).trim() || 'no output'}`);
}

/** `count` echo requests `intervalS` apart, each given at least `waitS` to be answered. */
export interface EchoRequests {
  count: number;
  intervalS: number;
  waitS: number;
}

/**
 * ping's command line for a probe of `requests`, replies printed one per line. A deadline (`-w`), not a
 * reply timeout (`-W`): with `-c` alone, once any reply came ping stops waiting max(twice its slowest
 * reply, the interval) after its last request, so a reply 200 ms late under load counted as lost. With a
 * deadline ping waits until `count` replies came, sending on meanwhile (which is why echoOutcome reads
 * which requests were answered, not how many replies came), but stops at the first ICMP error: right
 * for a probe, where an error is a failure anyway.
 */
export function pingArgv(address: string, requests: EchoRequests): string[] {
  const deadlineS = Math.ceil((requests.count - 1) * requests.intervalS + requests.waitS);
  return ['ping', '-n', '-c', String(requests.count), '-i', String(requests.intervalS), '-w', String(deadlineS), address];
}

export interface EchoOutcome extends PingCount {
  /** The sequence numbers (1..count) of the requests sent and never answered. */
  unanswered: number[];
  /** The time of each reply (ms since the epoch), in the order they came; with ping's `-D` only. */
  replyTimesMs: number[];
}

// "[1700000000.123456] 64 bytes from 10.0.1.10: icmp_seq=3 ttl=62 time=0.101 ms" (IPv6: "from fd00::a: icmp_seq=3"), a
// duplicate ending "(DUP!)".
const replyLine = /^(?:\[(\d+\.\d+)\] )?\d+ bytes from \S+: icmp_seq=(\d+) .*time=[\d.]+ ms$/gm;

/**
 * Which of the first `count` requests of a ping (pingArgv's, or one sending more) were answered:
 * `transmitted` counts those of them that went out (all, unless ping stopped first: at its deadline, or
 * at an ICMP error under one), `received` those answered. Requests sent after them are not judged, nor
 * are duplicate replies.
 */
export function echoOutcome(exitCode: number, stdout: string, stderr: string, count: number): EchoOutcome {
  const counts = pingOutcome(exitCode, stdout, stderr);
  const answered = new Set<number>();
  const replyTimesMs: number[] = [];
  for (const m of stdout.matchAll(replyLine)) {
    const seq = Number(m[2]);
    if (m[1] !== undefined) replyTimesMs.push(Number(m[1]) * 1000);
    if (seq <= count) answered.add(seq);
  }
  const transmitted = Math.min(count, counts.transmitted);
  const unanswered = Array.from({ length: transmitted }, (_, i) => i + 1).filter((seq) => !answered.has(seq));
  return { transmitted, received: transmitted - unanswered.length, unanswered, replyTimesMs };
}

/**
 * What one ping of the pod's MTU with DF set (`ping -M do -s MTU-28 -c 1`; IPv6: MTU-48, never
 * fragmented on the way) says about the path: it must be refused with an ICMP "fragmentation needed"
 * (IPv6: "packet too big") naming an MTU below the pod's, either now ("From X icmp_seq=1 Frag needed and
 * DF set (mtu = N)", "From X icmp_seq=1 Packet too big: mtu=N") or earlier, when the pod's kernel already
 * holds that path MTU and refuses to send ("local error: message too long, mtu=N"). An answer means the packet crossed
 * whole as far as the pod can tell; silence means it was dropped without a word (a black hole).
 */
export function pathMtuVerdict(exitCode: number, stdout: string, stderr: string, podMtu: number): { ok: boolean; detail: string } {
  const counts = pingOutcome(exitCode, stdout, stderr);
  const told = /From (\S+) icmp_seq=\d+ (?:Frag needed and DF set \(mtu = (\d+)\)|Packet too big: mtu=(\d+))/.exec(stdout);
  const known = /local error: message too long, mtu[=:] ?(\d+)/.exec(`${stderr}\n${stdout}`);
  const mtu = told ? Number(told[2] ?? told[3]) : known ? Number(known[1]) : undefined;
  if (mtu !== undefined) {
    const said = told ? `fragmentation needed from ${told[1]}, mtu ${mtu}` : `the pod already holds path MTU ${mtu} (told earlier)`;
    return mtu < podMtu ? { ok: true, detail: said } : { ok: false, detail: `${said}: not below the pod's MTU ${podMtu}` };
  }
  if (counts.received > 0)
    return {
      ok: false,
      detail: `a ${podMtu}-byte packet with DF set was answered: nothing told the pod that the tunnel's headers do not fit`,
    };
  return { ok: false, detail: `a ${podMtu}-byte packet with DF set was dropped and no fragmentation needed came back (a black hole)` };
}

/**
 * Whether a probed node answers, judged as BFD judges a session (RFC 5880, "Detection Time"), counted
 * in probes rather than read off a clock: a node that left the last `multiplier` requests sent to it
 * unanswered is down, so one is detected within (multiplier + 1) intervals of its last answer. Counting
 * probes, a prober whose own process was held up (a long apply, a pause: no request went out) does not
 * take the silence it caused for the node's. Pure: the prober (prober.ts) feeds it replies and rounds.
 *
 * Coming back is slower than going: a node that was down is up again only once it answered
 * `multiplier` requests in a row, so a node flapping at the edge of loss does not pull traffic back and
 * forth. A node never heard from stays `unknown`, which a node treats as alive: one that cannot answer
 * (a kernel-fallback node has no responder) is never failed away from on probes alone, and a prober
 * just started trusts the published order rather than what it has not seen. Only a node seen answering
 * can be seen to stop.
 */

export type Verdict = 'unknown' | 'up' | 'down';

export interface DetectionSettings {
  intervalMs: number;
  multiplier: number;
}

/** One probed node, as the prober last judged it. Sequence numbers are the prober's, one per round. */
export interface Detection {
  verdict: Verdict;
  /** The newest request it answered. */
  lastAnswered?: number;
  /** The first request of the current run answered without a gap. */
  runFrom?: number;
}

export const startDetection = (): Detection => ({ verdict: 'unknown' });

/** `a - b` on wrapping 32-bit sequence numbers. */
const since = (a: number, b: number) => (a - b) >>> 0;

/**
 * A Ready reply to request `seq` when `lastSent` was the last request sent. One to a request older than
 * the last `multiplier` (queued somewhere meanwhile) says nothing of now, nor does one older than an
 * answer already counted; one saying the node's maps hold no spec (`ready` false) is no answer: such a
 * node does not forward.
 */
export function observeReply(d: Detection, seq: number, lastSent: number, ready: boolean, s: DetectionSettings): Detection {
  if (!ready || since(lastSent, seq) >= s.multiplier) return d;
  if (d.lastAnswered !== undefined && (seq === d.lastAnswered || since(seq, d.lastAnswered) > since(lastSent, d.lastAnswered))) return d;
  const unbroken = d.lastAnswered !== undefined && since(seq, d.lastAnswered) === 1;
  return { ...d, lastAnswered: seq, runFrom: unbroken ? d.runFrom : seq };
}

/** The verdict once request `lastSent` (and every one before it) had its interval to be answered. */
export function judge(d: Detection, lastSent: number, s: DetectionSettings): Detection {
  if (d.lastAnswered === undefined) return d;
  const unanswered = since(lastSent, d.lastAnswered);
  let verdict = d.verdict;
  if (unanswered >= s.multiplier) verdict = 'down';
  else if (verdict === 'unknown') verdict = 'up';
  else if (verdict === 'down' && since(d.lastAnswered, d.runFrom!) + 1 >= s.multiplier && unanswered === 0) verdict = 'up';
  return verdict === d.verdict ? d : { ...d, verdict };
}

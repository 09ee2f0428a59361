/**
 * Whether a probed node answers, judged as BFD judges a session (RFC 5880, "Detection Time"): a probe
 * every `intervalMs`; a node that sent no fresh Ready reply for `multiplier` intervals is down. Pure:
 * the prober (prober.ts) feeds it replies and the clock.
 *
 * Coming back is slower than going: a node that was down is up again only once it has answered without
 * a gap for one detection time, so a node flapping at the edge of loss does not pull traffic back and
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

/** One probed node, as the prober last judged it. */
export interface Detection {
  verdict: Verdict;
  /** When probing it began (ms, the prober's clock). */
  startedAt: number;
  /** When the verdict last changed. */
  changedAt: number;
  /** The last fresh Ready reply. */
  lastReplyAt?: number;
  /** The first reply of the current run without a gap of a detection time. */
  answeringSince?: number;
}

export const detectionTimeMs = (s: DetectionSettings): number => s.intervalMs * s.multiplier;

export const startDetection = (now: number): Detection => ({ verdict: 'unknown', startedAt: now, changedAt: now });

/**
 * A reply numbered `seq` when `lastSeq` was the last request sent: fresh when it answers one of the
 * last `multiplier` requests (an older one, queued somewhere meanwhile, says nothing of now). Replies
 * saying the node's maps hold no spec (`ready` false) are not answers: such a node does not forward.
 */
export function observeReply(d: Detection, now: number, seq: number, lastSeq: number, ready: boolean, s: DetectionSettings): Detection {
  const age = (lastSeq - seq) >>> 0;
  if (!ready || age >= s.multiplier) return d;
  const gap = d.lastReplyAt === undefined || now - d.lastReplyAt > detectionTimeMs(s);
  return { ...d, lastReplyAt: now, answeringSince: gap ? now : d.answeringSince };
}

/** The verdict at `now`. */
export function judge(d: Detection, now: number, s: DetectionSettings): Detection {
  const detect = detectionTimeMs(s);
  const answering = d.lastReplyAt !== undefined && now - d.lastReplyAt <= detect;
  let verdict = d.verdict;
  if (!answering) {
    if (verdict === 'up') verdict = 'down';
  } else if (verdict === 'unknown') {
    verdict = 'up';
  } else if (verdict === 'down' && now - d.answeringSince! >= detect) {
    verdict = 'up';
  }
  return verdict === d.verdict ? d : { ...d, verdict, changedAt: now };
}

/**
 * Whether this controller can still use a peer's API server with the credentials the peer's Secret holds
 * (docs/kubernetes.md, "Peers"). A peering needs it only when something changes, so a token that expired
 * or was revoked would go unseen until then: the leader reads its own NetworkConfig there at every check
 * and after every failed write, and says what it found (a log line, an Event, a metric, a problem).
 */
import { apiErrorText, apiStatus } from '../../k8s/api-errors';

type PeerApiReason = 'Reachable' | 'CredentialsRejected' | 'Forbidden' | 'Unreachable';

export interface PeerApiState {
  ok: boolean;
  reason: PeerApiReason;
  message: string;
  /** Since when (ms since the epoch): the first check that found it so. */
  since: number;
}

/**
 * What a call to the peer's API server found: `error` undefined when it succeeded. An answer other than
 * 401, 403 or a 5xx (a 404, a 409 on a stale read) took our credentials: the server is fine with us.
 */
export function peerApiState(error: unknown, peer: string, secret: string, now: number): PeerApiState {
  const status = apiStatus(error);
  if (error === undefined || (status !== undefined && status !== 401 && status !== 403 && status < 500))
    return { ok: true, reason: 'Reachable', message: `the API server of ${peer} accepts our credentials again`, since: now };
  const text = apiErrorText(error);
  if (status === 401)
    return {
      ok: false,
      reason: 'CredentialsRejected',
      // A 401 has no body to quote (and client-node keeps none).
      message: `the API server of ${peer} refuses our credentials (401 Unauthorized): the token expired or was revoked; put a new kubeconfig in Secret ${secret}`,
      since: now,
    };
  if (status === 403)
    return {
      ok: false,
      reason: 'Forbidden',
      message: `the API server of ${peer} does not let us read our own NetworkConfig (${text}): its role for our peer ServiceAccount`,
      since: now,
    };
  return { ok: false, reason: 'Unreachable', message: `the API server of ${peer} cannot be reached (${text})`, since: now };
}

/** The state to keep: the earlier one while nothing but the time changed (so `since` stays the first sighting). */
export const nextPeerApiState = (previous: PeerApiState | undefined, found: PeerApiState): PeerApiState =>
  previous !== undefined && previous.reason === found.reason ? previous : found;

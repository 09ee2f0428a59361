/**
 * What a peering's TunnelEndpoint says of it (status.conditions), pure: whether the peering carries
 * traffic, and if not, why, in the words `kubectl get tunnelendpoints` shows (READY, REASON).
 *
 * - `CredentialsValid`: the peer's API server takes the credentials of its Secret (the leader's last
 *   check: peer-api.ts); Unknown until a check, or while the server cannot be reached. A new leader
 *   keeps what the former one found until its own first check, so a change of leader writes nothing.
 * - `Connected`: both NetworkConfigs are exchanged and answered (the Network Manager's `ready`), and the
 *   peer's API server still takes our credentials.
 * - `Remapped`: whether the peer's networks, or ours as the peer sees them, are translated (True says
 *   which); Unknown until the exchange is done.
 * - `GatewayReady`: this cluster's elected gateway is Ready.
 * - `Ready`: Connected and GatewayReady; its reason is the first that is not so.
 *
 * Nothing here carries a time or a counter: at rest the conditions do not change, so nothing is written.
 */
import type { ConditionValue } from '../api/conditions';
import type { PeerState } from '../api/peer-states';
import type { IpamPlanes } from '../network-ipam/planes';
import type { NetworkConfigSpec } from '../api/network-config';
import type { TunnelEndpoint } from '../api/tunnel-endpoint';
import { type Cidr, cidrsEqual, formatCidr, parseCidr } from '../net/cidr';

export interface PeeringFacts {
  peer: string;
  /** The Network Manager's state of the peering, and why when it is not ready. */
  state: PeerState;
  reason?: string;
  /** The peering's TunnelEndpoint (state `ready` only). */
  tunnel?: TunnelEndpoint;
  /** The peer's NetworkConfig for us: its networks as it owns them. */
  theirs?: NetworkConfigSpec;
  /** Our networks. */
  /** Our networks, each family's (the IPAM's planes). */
  home: IpamPlanes;
  /** The last check of the peer's API server with our credentials; undefined before this leader's first. */
  api?: { ok: boolean; reason: string; message: string };
  /** The conditions on the TunnelEndpoint now: until its first check, a new leader keeps the former's word. */
  previous?: readonly ConditionValue[];
  gateway: { name: string; ready: boolean };
}

const notWaiting: Record<Exclude<PeerState, 'ready'>, { reason: string; message: (f: PeeringFacts) => string }> = {
  'waiting-for-peer': {
    reason: 'WaitingForPeer',
    message: (f) => `no NetworkConfig from ${f.peer} yet: its controller has not written to our API server`,
  },
  refused: { reason: 'Refused', message: (f) => `the NetworkConfig from ${f.peer} cannot be used: ${f.reason ?? 'no reason given'}` },
  remapped: {
    reason: 'WaitingForAnswer',
    message: (f) =>
      `the networks of ${f.peer} are placed here, but it has not answered our NetworkConfig${f.reason ? `: ${f.reason}` : ''}`,
  },
};

function credentials(f: PeeringFacts): ConditionValue {
  if (f.api === undefined) {
    const kept = f.previous?.find((c) => c.type === 'CredentialsValid');
    if (kept) return { type: kept.type, status: kept.status, reason: kept.reason, message: kept.message };
    return { type: 'CredentialsValid', status: 'Unknown', reason: 'NotChecked', message: `the API server of ${f.peer} is not checked yet` };
  }
  if (f.api.ok)
    return { type: 'CredentialsValid', status: 'True', reason: 'Accepted', message: `the API server of ${f.peer} accepts our credentials` };
  // Unreachable says nothing of the credentials.
  return {
    type: 'CredentialsValid',
    status: f.api.reason === 'Unreachable' ? 'Unknown' : 'False',
    reason: f.api.reason,
    message: f.api.message,
  };
}

function connected(f: PeeringFacts, creds: ConditionValue): ConditionValue {
  if (f.state !== 'ready') {
    const { reason, message } = notWaiting[f.state];
    return { type: 'Connected', status: 'False', reason, message: message(f) };
  }
  if (creds.status !== 'True' && creds.reason !== 'NotChecked')
    return { type: 'Connected', status: 'False', reason: creds.reason, message: creds.message };
  return { type: 'Connected', status: 'True', reason: 'Exchanged', message: `NetworkConfigs exchanged with ${f.peer} both ways` };
}

function remapped(f: PeeringFacts): ConditionValue {
  if (f.tunnel === undefined || f.theirs === undefined)
    return {
      type: 'Remapped',
      status: 'Unknown',
      reason: 'NotExchanged',
      message: `the NetworkConfig exchange with ${f.peer} is not done`,
    };
  const moved: string[] = [];
  const compare = (what: string, owned: Cidr, seen: Cidr) => {
    if (!cidrsEqual(owned, seen)) moved.push(`${what} ${formatCidr(owned)} is ${formatCidr(seen)}`);
  };
  const families = [
    { what: '', theirs: f.theirs, tunnel: f.tunnel, home: f.home.primary.home },
    ...(f.theirs.secondary && f.tunnel.secondary && f.home.secondary
      ? [{ what: 'secondary ', theirs: f.theirs.secondary, tunnel: f.tunnel.secondary, home: f.home.secondary.home }]
      : []),
  ];
  for (const { what, theirs, tunnel, home } of families) {
    compare(`${f.peer}'s ${what}PodCIDR`, parseCidr('podCIDR', theirs.podCIDR), tunnel.remotePodCIDR);
    compare(`${f.peer}'s ${what}ExternalCIDR`, parseCidr('externalCIDR', theirs.externalCIDR), tunnel.remoteExternalCIDR);
    compare(`our ${what}PodCIDR (as ${f.peer} sees it)`, home.podCIDR, tunnel.localNATPodCIDR);
    compare(`our ${what}ExternalCIDR (as ${f.peer} sees it)`, home.externalCIDR, tunnel.localNATExternalCIDR);
  }
  return moved.length > 0
    ? { type: 'Remapped', status: 'True', reason: 'Overlapping', message: moved.join('; ') }
    : { type: 'Remapped', status: 'False', reason: 'NoOverlap', message: 'every network is used as its owner numbers it' };
}

function gatewayReady(f: PeeringFacts): ConditionValue {
  return f.gateway.ready
    ? { type: 'GatewayReady', status: 'True', reason: 'GatewayReady', message: `the gateway ${f.gateway.name} is Ready` }
    : {
        type: 'GatewayReady',
        status: 'False',
        reason: 'NoReadyGateway',
        message: `the gateway ${f.gateway.name} is not Ready (no candidate is)`,
      };
}

export function peeringConditions(f: PeeringFacts): ConditionValue[] {
  const creds = credentials(f);
  const conn = connected(f, creds);
  const gateway = gatewayReady(f);
  const blocking = [conn, gateway].find((c) => c.status !== 'True');
  const ready: ConditionValue = blocking
    ? { type: 'Ready', status: 'False', reason: blocking.reason, message: blocking.message }
    : { type: 'Ready', status: 'True', reason: 'Connected', message: `traffic to ${f.peer} flows through the gateway ${f.gateway.name}` };
  return [ready, conn, creds, remapped(f), gateway];
}

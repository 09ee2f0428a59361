/**
 * The TunnelEndpoint: everything a dataplane needs to reach one peer, the four prefixes of PRODUCT.md
 * ("How a packet crosses") and the peer's gateway. It exists only once both directions of the
 * NetworkConfig exchange are done, so a dataplane never translates with a prefix it has guessed.
 */
import { peerView } from '../ipam/peers';
import type { IpamState } from '../ipam/state';
import type { GatewayEndpoint, NetworkConfig } from './network-config';

export interface TunnelEndpoint {
  clusterId: string;
  /** The peer's networks as seen here. */
  remotePodCIDR: string;
  remoteExternalCIDR: string;
  /** Our networks as seen by the peer. */
  localNATPodCIDR: string;
  localNATExternalCIDR: string;
  /** The peer's gateway. */
  endpoint: GatewayEndpoint;
}

/** The TunnelEndpoint toward the peer that sent `remote`, or undefined while a direction is missing. */
export function tunnelEndpointFor(ipam: IpamState, local: NetworkConfig, remote: NetworkConfig | undefined): TunnelEndpoint | undefined {
  if (!local.status?.processed || !remote?.status?.processed) return undefined;
  const record = ipam.peers.get(remote.spec.clusterId);
  if (!record) return undefined;
  const view = peerView(record);
  if (view.localNATPodCIDR === null || view.localNATExternalCIDR === null) return undefined;
  return {
    clusterId: view.clusterId,
    remotePodCIDR: view.remotePodCIDR,
    remoteExternalCIDR: view.remoteExternalCIDR,
    localNATPodCIDR: view.localNATPodCIDR,
    localNATExternalCIDR: view.localNATExternalCIDR,
    endpoint: remote.spec.endpoint,
  };
}

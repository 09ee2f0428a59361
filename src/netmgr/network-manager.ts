/**
 * The Network Manager as a pure state machine: one peering per remote cluster, holding our NetworkConfig
 * for it and the one it sent us. Each event (start, a config or a status arrives, removal) gives a new
 * manager state and a new IPAM state; what must be replicated to the peer is returned, never sent.
 */
import { InputError } from '../errors';
import { parseClusterId } from '../ipam/cluster-id';
import { removePeer } from '../ipam/peers';
import type { IpamState } from '../ipam/state';
import {
  type GatewayEndpoint,
  type NetworkConfig,
  type NetworkConfigStatus,
  acceptStatus,
  createLocalNetworkConfig,
  parseGatewayEndpoint,
  processRemoteNetworkConfig,
} from './network-config';
import { type TunnelEndpoint, tunnelEndpointFor } from './tunnel-endpoint';

export interface Peering {
  /** Ours, replicated to the peer; its status is written there. */
  readonly local: NetworkConfig;
  /** The peer's, replicated here; we write its status. */
  readonly remote?: NetworkConfig;
}

export interface NetworkManagerState {
  readonly clusterId: string;
  readonly endpoint: GatewayEndpoint;
  readonly peerings: ReadonlyMap<string, Peering>;
}

export interface Step {
  manager: NetworkManagerState;
  ipam: IpamState;
}

export function createNetworkManager(clusterId: string, endpoint: GatewayEndpoint): NetworkManagerState {
  return { clusterId: parseClusterId('clusterId', clusterId), endpoint: parseGatewayEndpoint('endpoint', endpoint), peerings: new Map() };
}

function withPeering(manager: NetworkManagerState, clusterId: string, peering: Peering | undefined): NetworkManagerState {
  const peerings = new Map(manager.peerings);
  if (peering) peerings.set(clusterId, peering);
  else peerings.delete(clusterId);
  return { ...manager, peerings };
}

function peeringOf(manager: NetworkManagerState, clusterId: string): Peering {
  const peering = manager.peerings.get(clusterId);
  if (!peering) throw new InputError('clusterId', clusterId, 'no peering with this cluster; start it first');
  return peering;
}

/** Starts (or restarts after our networks changed) a peering: returns our NetworkConfig to replicate. */
export function startPeering(manager: NetworkManagerState, ipam: IpamState, remoteClusterId: string): Step & { outgoing: NetworkConfig } {
  const local = createLocalNetworkConfig(ipam, manager.clusterId, remoteClusterId, manager.endpoint);
  const existing = manager.peerings.get(local.spec.remoteClusterId);
  if (existing && JSON.stringify(existing.local.spec) === JSON.stringify(local.spec)) return { manager, ipam, outgoing: existing.local };
  return { manager: withPeering(manager, local.spec.remoteClusterId, { ...existing, local }), ipam, outgoing: local };
}

/** The peer's NetworkConfig arrived: remap its networks; the returned config carries our status back. */
export function receiveNetworkConfig(manager: NetworkManagerState, ipam: IpamState, config: NetworkConfig): Step & { outgoing: NetworkConfig } {
  const peering = peeringOf(manager, parseClusterId('spec.clusterId', config.spec.clusterId));
  const processed = processRemoteNetworkConfig(ipam, manager.clusterId, config);
  return { manager: withPeering(manager, config.spec.clusterId, { ...peering, remote: processed.config }), ipam: processed.ipam, outgoing: processed.config };
}

/** The peer wrote the status of our NetworkConfig: record how it sees our networks. */
export function receiveStatus(manager: NetworkManagerState, ipam: IpamState, remoteClusterId: string, status: NetworkConfigStatus): Step {
  const peering = peeringOf(manager, remoteClusterId);
  const local: NetworkConfig = { ...peering.local, status };
  return { manager: withPeering(manager, remoteClusterId, { ...peering, local }), ipam: acceptStatus(ipam, local) };
}

export function tunnelEndpoint(manager: NetworkManagerState, ipam: IpamState, remoteClusterId: string): TunnelEndpoint | undefined {
  const peering = manager.peerings.get(remoteClusterId);
  return peering && tunnelEndpointFor(ipam, peering.local, peering.remote);
}

/** Ends a peering: both NetworkConfigs go, so does the TunnelEndpoint, and the IPAM releases the peer. */
export function removePeering(manager: NetworkManagerState, ipam: IpamState, remoteClusterId: string): Step {
  return { manager: withPeering(manager, remoteClusterId, undefined), ipam: removePeer(ipam, remoteClusterId).state };
}

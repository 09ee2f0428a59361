/**
 * The NetworkConfig exchange of seed 000. Each cluster writes the spec of a NetworkConfig for each peer
 * (its own networks and gateway); the peer that receives it writes the status (how it remapped them).
 * Pure functions over the IPAM state: replication between clusters is the caller's job.
 */
import { InputError, StateError } from '../errors';
import { cidrsEqual, formatCidr, parseCidr, parseIp } from '../ipam/cidr';
import { parseClusterId } from '../ipam/cluster-id';
import { addPeer, setRemoteView } from '../ipam/peers';
import type { IpamState } from '../ipam/state';

export interface GatewayEndpoint {
  address: string;
  port?: number;
}

/** Written by the owner of the networks. */
export interface NetworkConfigSpec {
  /** The owner. */
  clusterId: string;
  /** The cluster this NetworkConfig is for. */
  remoteClusterId: string;
  podCIDR: string;
  externalCIDR: string;
  endpoint: GatewayEndpoint;
}

/** The receiver's answer: where it placed the owner's networks, or notRemapped when kept as they are. */
export interface NetworkConfigStatus {
  processed: boolean;
  remappedPodCIDR: string;
  remappedExternalCIDR: string;
}

export const notRemapped = 'None';

export interface NetworkConfig {
  spec: NetworkConfigSpec;
  status?: NetworkConfigStatus;
}

export function parseGatewayEndpoint(field: string, value: unknown): GatewayEndpoint {
  if (typeof value !== 'object' || value === null) throw new InputError(field, value, 'expected {address, port?}');
  const { address, port } = value as Record<string, unknown>;
  parseIp(`${field}.address`, address);
  if (port !== undefined && (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535)) {
    throw new InputError(`${field}.port`, port, 'must be an integer from 1 to 65535');
  }
  return { address: address as string, ...(port !== undefined ? { port: port as number } : {}) };
}

/** Our NetworkConfig for a peer: our networks as the IPAM has them, no status yet. */
export function createLocalNetworkConfig(ipam: IpamState, clusterId: string, remoteClusterId: string, endpoint: GatewayEndpoint): NetworkConfig {
  const owner = parseClusterId('clusterId', clusterId);
  const recipient = parseClusterId('remoteClusterId', remoteClusterId);
  if (owner === recipient) throw new InputError('remoteClusterId', recipient, 'a cluster does not peer with itself');
  return {
    spec: {
      clusterId: owner,
      remoteClusterId: recipient,
      podCIDR: formatCidr(ipam.home.podCIDR),
      externalCIDR: formatCidr(ipam.home.externalCIDR),
      endpoint: parseGatewayEndpoint('endpoint', endpoint),
    },
  };
}

/** A peer's NetworkConfig arrived: place its networks in our IPAM and answer with the status. */
export function processRemoteNetworkConfig(ipam: IpamState, localClusterId: string, config: NetworkConfig): { ipam: IpamState; config: NetworkConfig } {
  const { spec } = config;
  if (spec.remoteClusterId !== localClusterId) {
    throw new InputError('spec.remoteClusterId', spec.remoteClusterId, `this NetworkConfig is not for us (${localClusterId})`);
  }
  if (spec.clusterId === localClusterId) throw new InputError('spec.clusterId', spec.clusterId, 'a cluster does not peer with itself');
  parseGatewayEndpoint('spec.endpoint', spec.endpoint);
  const { state, result } = addPeer(ipam, { clusterId: spec.clusterId, podCIDR: spec.podCIDR, externalCIDR: spec.externalCIDR });
  const status: NetworkConfigStatus = {
    processed: true,
    remappedPodCIDR: result.remotePodCIDR === result.podCIDR ? notRemapped : result.remotePodCIDR,
    remappedExternalCIDR: result.remoteExternalCIDR === result.externalCIDR ? notRemapped : result.remoteExternalCIDR,
  };
  return { ipam: state, config: { spec, status } };
}

/** The peer answered on our NetworkConfig: record in our IPAM how it sees our networks. */
export function acceptStatus(ipam: IpamState, config: NetworkConfig): IpamState {
  const { spec, status } = config;
  if (!status?.processed) throw new InputError('status.processed', status?.processed, 'the peer has not processed this NetworkConfig yet');
  // A status about networks we no longer have would make the dataplane translate into the wrong ones.
  if (!cidrsEqual(parseCidr('spec.podCIDR', spec.podCIDR), ipam.home.podCIDR) || !cidrsEqual(parseCidr('spec.externalCIDR', spec.externalCIDR), ipam.home.externalCIDR)) {
    throw new StateError(`the status from ${spec.remoteClusterId} answers a NetworkConfig with networks we no longer have (${spec.podCIDR}, ${spec.externalCIDR}); send it our current NetworkConfig`);
  }
  return setRemoteView(ipam, {
    clusterId: spec.remoteClusterId,
    localNATPodCIDR: status.remappedPodCIDR === notRemapped ? spec.podCIDR : status.remappedPodCIDR,
    localNATExternalCIDR: status.remappedExternalCIDR === notRemapped ? spec.externalCIDR : status.remappedExternalCIDR,
  }).state;
}

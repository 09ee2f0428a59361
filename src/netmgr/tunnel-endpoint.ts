/**
 * The TunnelEndpoint: everything a dataplane needs to reach one peer, the four prefixes of
 * docs/packet-contract.md and the peer's gateway. It exists only once both directions of the
 * NetworkConfig exchange are done, so a dataplane never translates with a prefix it has guessed.
 */
import type { GatewayEndpoint } from '../api/network-config';
import type { TunnelEndpoint } from '../api/tunnel-endpoint';
import type { IpamState } from '../network-ipam/state';
import { parseIp } from '../net/cidr';

/** The TunnelEndpoint toward `peer`, whose gateway is `endpoint`, or undefined while its view of us is unknown. */
export function tunnelEndpoint(ipam: IpamState, peer: string, endpoint: GatewayEndpoint): TunnelEndpoint | undefined {
  const record = ipam.peers.get(peer);
  if (!record?.localNATPodCIDR || !record.localNATExternalCIDR) return undefined;
  return {
    clusterId: record.clusterId,
    remotePodCIDR: record.remotePodCIDR,
    remoteExternalCIDR: record.remoteExternalCIDR,
    localNATPodCIDR: record.localNATPodCIDR,
    localNATExternalCIDR: record.localNATExternalCIDR,
    endpoint: {
      address: parseIp('spec.endpoint.address', endpoint.address),
      ...(endpoint.port !== undefined ? { port: endpoint.port } : {}),
      standbyAddresses: (endpoint.standbyAddresses ?? []).map((a, i) => parseIp(`spec.endpoint.standbyAddresses[${i}]`, a)),
    },
  };
}

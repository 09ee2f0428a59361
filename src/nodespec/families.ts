/**
 * A spec's networks by IP family: the primary family's are the spec's (and each peer's) own fields, the
 * secondary family's sit under `secondary` (src/nodespec/spec.ts). Every consumer that works per family
 * reads them here, so none assumes which family is primary.
 */
import type { IpFamily } from '../net/cidr';
import type { FamilyNetworks, NodeDataplaneSpec, PeerFamilyNetworks, PeerSpec } from './spec';

/** The families a spec carries, primary first. */
export const familiesOf = (spec: NodeDataplaneSpec): IpFamily[] =>
  spec.secondary ? [spec.podCIDR.family, spec.secondary.podCIDR.family] : [spec.podCIDR.family];

/** The home cluster's networks of one family, if it has that family. */
export function homeNetworks(spec: NodeDataplaneSpec, family: IpFamily): FamilyNetworks | undefined {
  if (spec.podCIDR.family === family) return spec;
  return spec.secondary?.podCIDR.family === family ? spec.secondary : undefined;
}

/** A peering's networks of one family, if the peering carries that family. */
export function peerNetworks(peer: PeerSpec, family: IpFamily): PeerFamilyNetworks | undefined {
  if (peer.remotePodCIDR.family === family) return peer;
  return peer.secondary?.remotePodCIDR.family === family ? peer.secondary : undefined;
}

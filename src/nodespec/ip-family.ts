/**
 * The underlay family of a node spec, checked by both dataplanes' `validate` before anything is
 * programmed (networks of either family in either place need no check here: the NodeDataplane reader
 * checks each is of the family its place says; the kernel fallback's own checks are
 * src/dataplane/kernel/carried-families.ts). The controller never plans a spec that this refuses: it takes
 * every address through src/net/carried.ts where it enters.
 */
import { requireUnderlayFamily } from '../net/carried';
import { type Ip, formatIp } from '../net/cidr';
import type { NodeDataplaneSpec } from './spec';

/** Every tunnel end of the spec (an address of the underlay) with its field name. */
function* underlayAddressesOf(spec: NodeDataplaneSpec): Generator<[string, Ip]> {
  yield ['node.underlayAddress', spec.node.underlayAddress];
  if (spec.node.publicAddress) yield ['node.publicAddress', spec.node.publicAddress];
  yield ['activeGateway.underlayAddress', spec.activeGateway.underlayAddress];
  for (const [i, p] of spec.peers.entries()) {
    yield [`peers[${i}].endpoint.address`, p.endpoint.address];
    for (const [j, a] of p.endpoint.standbyAddresses.entries()) yield [`peers[${i}].endpoint.standbyAddresses[${j}]`, a];
  }
  for (const [i, n] of spec.nodes.entries()) yield [`nodes[${i}].underlayAddress`, n.underlayAddress];
}

/**
 * Both dataplanes' underlay: either family, one for every tunnel end of the spec (the node's, the
 * gateways', the other nodes', the peers'): their tunnels run to an IPv4 or an IPv6 end
 * (docs/datapath.md, docs/kernel-fallback.md), but no tunnel joins two families. The controller gives a
 * cluster one underlay family and refuses a peer of another (src/net/carried.ts); this is the agent's own
 * check of what it is given, naming the first value of another family than its node's underlay address.
 */
export function requireOneUnderlayFamily(spec: NodeDataplaneSpec): void {
  const own = spec.node.underlayAddress;
  const ofOwn = `spec.node.underlayAddress ${formatIp(own)}`;
  for (const [field, value] of underlayAddressesOf(spec)) requireUnderlayFamily(`spec.${field}`, value, own.family, ofOwn);
}

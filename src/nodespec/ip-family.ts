/**
 * Which IP families a node spec uses, checked once per dataplane by `validate`, naming the first field
 * it refuses, before anything is programmed: both datapaths carry networks of either family in either
 * place (an IPv6-only cluster, IPv6 as the primary family, a peering of one family), the eBPF one over an
 * underlay of either family, the kernel fallback over IPv4; the kernel fallback's own checks are src/dataplane/kernel/carried-families.ts. The
 * controller never plans a spec that this refuses: it takes every address and network through
 * src/net/carried.ts where it enters.
 */
import { InputError } from '../errors';
import { requireUnderlayFamily } from '../net/carried';
import { type Cidr, type Ip, formatCidr, formatIp } from '../net/cidr';
import type { NodeDataplaneSpec } from './spec';

type Value = Ip | Cidr;

/**
 * What a field is: a network or address of the clusters (either family: the NodeDataplane reader checks
 * each is of the family its place says), or of the underlay the tunnels run on.
 */
type Role = 'network' | 'underlay';

/** Every address and network of the spec with its field name and role. */
function* addressesOf(spec: NodeDataplaneSpec): Generator<[string, Value, Role]> {
  yield ['podCIDR', spec.podCIDR, 'network'];
  yield ['externalCIDR', spec.externalCIDR, 'network'];
  yield ['transitAddress', spec.transitAddress, 'network'];
  if (spec.secondary) {
    yield ['secondary.podCIDR', spec.secondary.podCIDR, 'network'];
    yield ['secondary.externalCIDR', spec.secondary.externalCIDR, 'network'];
    yield ['secondary.transitAddress', spec.secondary.transitAddress, 'network'];
  }
  yield ['node.underlayAddress', spec.node.underlayAddress, 'underlay'];
  if (spec.node.publicAddress) yield ['node.publicAddress', spec.node.publicAddress, 'underlay'];
  yield ['activeGateway.underlayAddress', spec.activeGateway.underlayAddress, 'underlay'];
  for (const [i, p] of spec.peers.entries()) {
    yield [`peers[${i}].remotePodCIDR`, p.remotePodCIDR, 'network'];
    yield [`peers[${i}].remoteExternalCIDR`, p.remoteExternalCIDR, 'network'];
    yield [`peers[${i}].localNATPodCIDR`, p.localNATPodCIDR, 'network'];
    yield [`peers[${i}].localNATExternalCIDR`, p.localNATExternalCIDR, 'network'];
    if (p.secondary) {
      yield [`peers[${i}].secondary.remotePodCIDR`, p.secondary.remotePodCIDR, 'network'];
      yield [`peers[${i}].secondary.remoteExternalCIDR`, p.secondary.remoteExternalCIDR, 'network'];
      yield [`peers[${i}].secondary.localNATPodCIDR`, p.secondary.localNATPodCIDR, 'network'];
      yield [`peers[${i}].secondary.localNATExternalCIDR`, p.secondary.localNATExternalCIDR, 'network'];
    }
    yield [`peers[${i}].endpoint.address`, p.endpoint.address, 'underlay'];
    for (const [j, a] of p.endpoint.standbyAddresses.entries()) yield [`peers[${i}].endpoint.standbyAddresses[${j}]`, a, 'underlay'];
  }
  for (const [i, m] of spec.natMappings.entries()) {
    yield [`natMappings[${i}].externalAddress`, m.externalAddress, 'network'];
    yield [`natMappings[${i}].endpointAddress`, m.endpointAddress, 'network'];
  }
  for (const [i, n] of spec.nodes.entries()) {
    yield [`nodes[${i}].underlayAddress`, n.underlayAddress, 'underlay'];
    for (const [j, c] of n.podCIDRs.entries()) yield [`nodes[${i}].podCIDRs[${j}]`, c, 'network'];
  }
}

const formatValue = (value: Value): string => ('prefix' in value ? formatCidr(value) : formatIp(value));

/** Refuses a spec with any IPv6 value: `dataplane` carries IPv4 only. */
export function requireIpv4(spec: NodeDataplaneSpec, dataplane: string): void {
  for (const [field, value] of addressesOf(spec)) {
    if (value.family === 4) continue;
    throw new InputError(`spec.${field}`, formatValue(value), `${dataplane} carries IPv4 only (IPv6 clusters are not supported yet)`);
  }
}

/**
 * Refuses an IPv6 underlay address (the node's, its public one, the active gateway's, a peer's endpoint or
 * standby, another node's), naming the first with `reason`: the tunnels' outer addresses stay IPv4.
 */
export function requireIpv4Underlay(spec: NodeDataplaneSpec, reason: string): void {
  for (const [field, value, role] of addressesOf(spec))
    if (role === 'underlay' && value.family !== 4) throw new InputError(`spec.${field}`, formatValue(value), reason);
}

/**
 * The eBPF agent's families: networks of either family in any place, and an underlay of either family,
 * one for every tunnel end of the spec (the node's, the gateways', the other nodes', the peers'): its
 * programs tunnel to an IPv4 or an IPv6 end (docs/datapath.md), but no tunnel joins two families. The
 * controller gives a cluster one underlay family and refuses a peer of another (src/net/carried.ts);
 * this is the agent's own check of what it is given, naming the first value of another family than
 * its node's underlay address.
 */
export function requireEbpfFamilies(spec: NodeDataplaneSpec): void {
  const own = spec.node.underlayAddress;
  const ofOwn = `spec.node.underlayAddress ${formatIp(own)}`;
  for (const [field, value, role] of addressesOf(spec))
    if (role === 'underlay') requireUnderlayFamily(`spec.${field}`, value as Ip, own.family, ofOwn);
}

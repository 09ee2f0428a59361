/**
 * Which IP families a node spec uses, checked once per dataplane by `validate`, naming the first field
 * it refuses, before anything is programmed: the kernel fallback translates IPv4 only; the eBPF datapath
 * IPv4 and, as the secondary family of a dual-stack cluster, IPv6, over an IPv4 underlay. The
 * controller never plans a spec that this refuses: it takes every address and network through
 * src/net/carried.ts where it enters.
 */
import { InputError } from '../errors';
import { type Cidr, type Ip, formatCidr, formatIp } from '../net/cidr';
import type { NodeDataplaneSpec } from './spec';

type Value = Ip | Cidr;

/**
 * What a field is: a network or address of the primary family (the spec's own), of the secondary one,
 * of either (a NatMapping, a node's pod prefix: one per family), or of the underlay the tunnels run on.
 */
type Role = 'primary' | 'secondary' | 'either' | 'underlay';

/** Every address and network of the spec with its field name and role. */
function* addressesOf(spec: NodeDataplaneSpec): Generator<[string, Value, Role]> {
  yield ['podCIDR', spec.podCIDR, 'primary'];
  yield ['externalCIDR', spec.externalCIDR, 'primary'];
  yield ['transitAddress', spec.transitAddress, 'primary'];
  if (spec.secondary) {
    yield ['secondary.podCIDR', spec.secondary.podCIDR, 'secondary'];
    yield ['secondary.externalCIDR', spec.secondary.externalCIDR, 'secondary'];
    yield ['secondary.transitAddress', spec.secondary.transitAddress, 'secondary'];
  }
  yield ['node.underlayAddress', spec.node.underlayAddress, 'underlay'];
  if (spec.node.publicAddress) yield ['node.publicAddress', spec.node.publicAddress, 'underlay'];
  yield ['activeGateway.underlayAddress', spec.activeGateway.underlayAddress, 'underlay'];
  for (const [i, p] of spec.peers.entries()) {
    yield [`peers[${i}].remotePodCIDR`, p.remotePodCIDR, 'primary'];
    yield [`peers[${i}].remoteExternalCIDR`, p.remoteExternalCIDR, 'primary'];
    yield [`peers[${i}].localNATPodCIDR`, p.localNATPodCIDR, 'primary'];
    yield [`peers[${i}].localNATExternalCIDR`, p.localNATExternalCIDR, 'primary'];
    if (p.secondary) {
      yield [`peers[${i}].secondary.remotePodCIDR`, p.secondary.remotePodCIDR, 'secondary'];
      yield [`peers[${i}].secondary.remoteExternalCIDR`, p.secondary.remoteExternalCIDR, 'secondary'];
      yield [`peers[${i}].secondary.localNATPodCIDR`, p.secondary.localNATPodCIDR, 'secondary'];
      yield [`peers[${i}].secondary.localNATExternalCIDR`, p.secondary.localNATExternalCIDR, 'secondary'];
    }
    yield [`peers[${i}].endpoint.address`, p.endpoint.address, 'underlay'];
    for (const [j, a] of p.endpoint.standbyAddresses.entries()) yield [`peers[${i}].endpoint.standbyAddresses[${j}]`, a, 'underlay'];
  }
  for (const [i, m] of spec.natMappings.entries()) {
    yield [`natMappings[${i}].externalAddress`, m.externalAddress, 'either'];
    yield [`natMappings[${i}].endpointAddress`, m.endpointAddress, 'either'];
  }
  for (const [i, n] of spec.nodes.entries()) {
    yield [`nodes[${i}].underlayAddress`, n.underlayAddress, 'underlay'];
    for (const [j, c] of n.podCIDRs.entries()) yield [`nodes[${i}].podCIDRs[${j}]`, c, 'either'];
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

const ebpfRefusals: Partial<Record<Role, string>> = {
  primary: 'the eBPF datapath needs IPv4 as the primary family (IPv6 is carried as the secondary family of a dual-stack cluster)',
  underlay: 'the eBPF datapath tunnels over IPv4 only (IPv6 underlay and gateway addresses are not supported yet)',
};

/** Refuses what the eBPF datapath cannot carry: an IPv6 primary family, an IPv6 underlay, gateway or public address. */
export function requireEbpfFamilies(spec: NodeDataplaneSpec): void {
  for (const [field, value, role] of addressesOf(spec)) {
    const refusal = ebpfRefusals[role];
    if (value.family === 4 || !refusal) continue;
    throw new InputError(`spec.${field}`, formatValue(value), refusal);
  }
}

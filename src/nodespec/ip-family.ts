/**
 * Which IP family a node spec uses, checked once per dataplane: the eBPF datapath and the kernel
 * fallback translate IPv4 only, so a spec with an IPv6 network or address is refused by `validate`,
 * naming the first such field, before anything is programmed. The controller never plans a spec that
 * this refuses: it takes every address and network through src/net/carried.ts where it enters.
 */
import { InputError } from '../errors';
import { type Cidr, type Ip, formatCidr, formatIp } from '../net/cidr';
import type { NodeDataplaneSpec } from './spec';

type Value = Ip | Cidr;

/** Every address and network of the spec with its field name. */
function* addressesOf(spec: NodeDataplaneSpec): Generator<[string, Value]> {
  yield ['podCIDR', spec.podCIDR];
  yield ['externalCIDR', spec.externalCIDR];
  yield ['transitAddress', spec.transitAddress];
  if (spec.secondary) {
    yield ['secondary.podCIDR', spec.secondary.podCIDR];
    yield ['secondary.externalCIDR', spec.secondary.externalCIDR];
    yield ['secondary.transitAddress', spec.secondary.transitAddress];
  }
  yield ['node.underlayAddress', spec.node.underlayAddress];
  if (spec.node.publicAddress) yield ['node.publicAddress', spec.node.publicAddress];
  yield ['activeGateway.underlayAddress', spec.activeGateway.underlayAddress];
  for (const [i, p] of spec.peers.entries()) {
    yield [`peers[${i}].remotePodCIDR`, p.remotePodCIDR];
    yield [`peers[${i}].remoteExternalCIDR`, p.remoteExternalCIDR];
    yield [`peers[${i}].localNATPodCIDR`, p.localNATPodCIDR];
    yield [`peers[${i}].localNATExternalCIDR`, p.localNATExternalCIDR];
    if (p.secondary) yield [`peers[${i}].secondary.remotePodCIDR`, p.secondary.remotePodCIDR];
    yield [`peers[${i}].endpoint.address`, p.endpoint.address];
  }
  for (const [i, m] of spec.natMappings.entries()) {
    yield [`natMappings[${i}].externalAddress`, m.externalAddress];
    yield [`natMappings[${i}].endpointAddress`, m.endpointAddress];
  }
  for (const [i, n] of spec.nodes.entries()) {
    yield [`nodes[${i}].underlayAddress`, n.underlayAddress];
    for (const [j, c] of n.podCIDRs.entries()) yield [`nodes[${i}].podCIDRs[${j}]`, c];
  }
}

/** Refuses a spec with any IPv6 value: `dataplane` carries IPv4 only. */
export function requireIpv4(spec: NodeDataplaneSpec, dataplane: string): void {
  for (const [field, value] of addressesOf(spec)) {
    if (value.family === 4) continue;
    throw new InputError(
      `spec.${field}`,
      'prefix' in value ? formatCidr(value) : formatIp(value),
      `${dataplane} carries IPv4 only (IPv6 clusters are not supported yet)`,
    );
  }
}

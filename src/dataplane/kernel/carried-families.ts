/**
 * The IP families the kernel fallback carries, checked by its `validate` before anything is programmed:
 * IPv4 as the primary family and IPv6 as the secondary one of a dual-stack spec (its networks, the
 * peers' views of them, NatMappings, node pod prefixes). The underlay stays IPv4: node, gateway and
 * public addresses and peer endpoints are the tunnels' outer addresses. An encrypted peering carries
 * IPv4 only: its xfrm policies select IPv4 prefixes (ipsec-plan.ts).
 */
import { InputError } from '../../errors';
import { type Cidr, type Ip, formatCidr, formatIp } from '../../net/cidr';
import type { NodeDataplaneSpec } from '../../nodespec/spec';

/** Every underlay address of the spec with its field name. */
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

const refuse = (field: string, value: Ip | Cidr, reason: string) =>
  new InputError(`spec.${field}`, 'prefix' in value ? formatCidr(value) : formatIp(value), reason);

/** Refuses a spec the kernel fallback cannot carry, naming the first field that it cannot. */
export function requireFallbackFamilies(spec: NodeDataplaneSpec): void {
  if (spec.podCIDR.family !== 4)
    throw refuse('podCIDR', spec.podCIDR, 'the kernel fallback takes IPv4 as the primary family (IPv6 as the secondary one, dual-stack)');
  for (const [field, address] of underlayAddressesOf(spec))
    if (address.family !== 4) throw refuse(field, address, "the kernel fallback's underlay (the tunnels' outer addresses) is IPv4 only");
  for (const [i, p] of spec.peers.entries())
    if (p.transport === 'ipsec' && p.secondary)
      throw refuse(
        `peers[${i}].secondary.remotePodCIDR`,
        p.secondary.remotePodCIDR,
        'an encrypted (IPsec) peering of the kernel fallback carries IPv4 only: its xfrm policies select IPv4 prefixes',
      );
}

/**
 * The rule of every document with a `secondary` (docs/dual-stack.md, "The model"): its own fields hold
 * its primary family's networks, and `secondary` the other family's; two places of one family would say
 * two things about it. Each reader checks it here, naming its own fields: the controller config and the
 * IPAM planes, a NodeDataplane and its peerings, a peer's NetworkConfig, the stored IPAM state and
 * objects, the lab's topology.
 */
import { InputError } from '../errors';
import { type Cidr, type IpFamily, formatCidr } from '../net/cidr';

/** A network's (or an address's) family: parsed, or as written (an IPv6 one has colons, an IPv4 one none). */
export const networkFamily = (network: Cidr | string): IpFamily =>
  typeof network === 'string' ? (network.includes(':') ? 6 : 4) : network.family;

const networkText = (network: Cidr | string): string => (typeof network === 'string' ? network : formatCidr(network));

/** A network as its reader names it: its field, and the network (parsed, or as written). */
type NamedNetwork = readonly [field: string, network: Cidr | string];

/** Refuses a secondary network of the primary's family, naming the secondary's field and value. */
export function requireOtherFamily([primaryField, primary]: NamedNetwork, [secondaryField, secondary]: NamedNetwork): void {
  const family = networkFamily(primary);
  if (networkFamily(secondary) === family)
    throw new InputError(
      secondaryField,
      networkText(secondary),
      `is IPv${family}, as ${primaryField} ${networkText(primary)} is: a secondary holds the other IP family's networks`,
    );
}

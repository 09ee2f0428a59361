/**
 * Address blocks that no node, pod or gateway has (RFC 6890's "this network", loopback, multicast, the
 * limited broadcast address; IPv6's unspecified, loopback and multicast): a network or an address in
 * one of them, from a peer or a careless configuration, would have routes and translations programmed
 * for traffic that can never come, on every node.
 */
import { InputError } from '../errors';
import { type Cidr, type Ip, cidrsOverlap, formatCidr, parseCidr } from './cidr';

const blocks: readonly { cidr: Cidr; name: string }[] = [
  ['0.0.0.0/8', '"this network" (RFC 1122)'],
  ['127.0.0.0/8', 'loopback'],
  ['224.0.0.0/4', 'multicast'],
  ['255.255.255.255/32', 'the limited broadcast address'],
  ['::/128', 'the unspecified address'],
  ['::1/128', 'loopback'],
  ['ff00::/8', 'multicast'],
].map(([text, name]) => ({ cidr: parseCidr('block', text), name: name! }));

const asNetwork = (value: Ip | Cidr): Cidr =>
  'prefix' in value ? value : { family: value.family, base: value.value, prefix: value.family === 4 ? 32 : 128 };

/** The special block `value` (an address, or any address of a network) is in, if any. */
function specialBlockOf(value: Ip | Cidr): { cidr: Cidr; name: string } | undefined {
  const network = asNetwork(value);
  return blocks.find((b) => cidrsOverlap(b.cidr, network));
}

/** Refuses an address, or a network with any address, in a special block; `text` is the value as given. */
export function requireUnicast(field: string, text: string, value: Ip | Cidr): void {
  const block = specialBlockOf(value);
  if (block)
    throw new InputError(
      field,
      text,
      `${'prefix' in value ? 'overlaps' : 'is in'} ${formatCidr(block.cidr)}, ${block.name}: not unicast space a node or pod can be in`,
    );
}

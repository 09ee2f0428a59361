/**
 * nft's JSON command document (libnftables-json(5)), as far as Strait writes it: the commands, objects,
 * statements and expressions of the fallback's two tables, typed so that a shape nft's JSON parser
 * would refuse does not compile. nft lists a ruleset (`nft -j list`) in the same objects, with handles.
 */

export type NftFamily = 'ip' | 'ip6' | 'inet';

/** nft's type of an address of one family. */
export type NftAddressType = 'ipv4_addr' | 'ipv6_addr';

/** The network header of one family, as a payload protocol and a NAT family (`ip saddr`, `snat ip6 to`). */
export type NftNetworkProtocol = 'ip' | 'ip6';

interface NftTable {
  family: NftFamily;
  name: string;
}

/** A base chain. nft's JSON takes the priority as a number only, not as a name such as `srcnat`. */
interface NftChain {
  family: NftFamily;
  table: string;
  name: string;
  type: 'filter' | 'nat';
  hook: 'prerouting' | 'forward' | 'postrouting';
  prio: number;
  policy: 'accept';
}

/** A named set of addresses; `interval` lets it hold prefixes. */
interface NftSet {
  family: NftFamily;
  table: string;
  name: string;
  type: NftAddressType;
  flags?: 'interval'[];
}

/** A named map from address to address. */
interface NftMap {
  family: NftFamily;
  table: string;
  name: string;
  type: NftAddressType;
  map: NftAddressType;
}

/** Elements added to the set or map `name`: keys, or [key, value] pairs. */
interface NftElements {
  family: NftFamily;
  table: string;
  name: string;
  elem: NftExpression[] | [NftExpression, NftExpression][];
}

interface NftRule {
  family: NftFamily;
  table: string;
  chain: string;
  expr: NftStatement[];
}

type NftObject =
  { table: NftTable } | { chain: NftChain } | { set: NftSet } | { map: NftMap } | { element: NftElements } | { rule: NftRule };

/** `add` creates what is absent (a table that exists is kept, with its contents); `delete` removes. */
export type NftCommand = { add: NftObject } | { delete: { table: NftTable } };

/** What libnftables runs as one transaction. */
export interface NftDocument {
  nftables: NftCommand[];
}

export type NftExpression =
  /** An address, an interface name, a TCP flag or a named set (`@name`). */
  | string
  | number
  /** TCP flags, OR'd. */
  | string[]
  | { payload: { protocol: NftNetworkProtocol | 'tcp'; field: 'saddr' | 'daddr' | 'flags' } }
  | { meta: { key: 'iifname' | 'oifname' | 'nfproto' } }
  /** The MTU of the route the packet takes. */
  | { rt: { key: 'mtu' } }
  | { 'tcp option': { name: 'maxseg'; field: 'size' } }
  | { prefix: { addr: string; len: number } }
  /** An anonymous set: keys, or a map's [key, value] pairs. */
  | { set: NftExpression[] | [NftExpression, NftExpression][] }
  /** `key map data`: data is an anonymous map or a named one (`@name`). */
  | { map: { key: NftExpression; data: NftExpression } }
  | { '&': [NftExpression, NftExpression] }
  | { '|': [NftExpression, NftExpression] };

/**
 * Source or destination NAT to `addr`. `family` is the address family (required in an inet table).
 * A prefix NAT (`snat ip prefix to ...`) is `flags: 'netmap'` (the kernel's NF_NAT_RANGE_NETMAP: keep
 * the host part) with `type_flags: 'prefix'`, as nft lists it; without `netmap` the kernel maps every
 * address into the range instead.
 */
interface NftNat {
  family?: NftNetworkProtocol;
  addr: NftExpression;
  flags?: 'netmap';
  type_flags?: 'prefix';
}

export type NftStatement =
  | { match: { op: '=='; left: NftExpression; right: NftExpression } }
  | { snat: NftNat }
  | { dnat: NftNat }
  | { mangle: { key: NftExpression; value: NftExpression } };

/**
 * The CNI network configuration on strait-ipam's stdin (src/cni/network-config.ts): the whole configuration
 * of the interface plugin that delegates to us (its own keys are none of our business), of which the
 * `ipam` object is ours and strict, so a typo in a pool list fails the pod's ADD instead of silently using
 * the cluster default (an unknown key is CNI's code 2). The keys only one command reads have schemas of
 * their own, checked by that command alone: CHECK's `prevResult` (a chained ADD may carry any), GC's
 * `cni.dev/valid-attachments`. `cniVersion` is negotiated before (src/cni/network-config.ts: CNI's code 1
 * for a version the plugin does not speak).
 */
import { type Static, Type } from '@sinclair/typebox';
import { AbsolutePath, ContainerId, Flag, InterfaceName, NetworkName, PoolList, mustBe } from './pool-ipam-protocol-schema';
import { List } from './schema';

/** Strict: a key strait-ipam does not know is refused. */
const CniIpamSchema = Type.Object(
  {
    // Not empty: no `minLength`, which needs a helper of ajv's the plugin cannot load (cni-names.ts).
    type: Type.Optional(Type.String({ not: { const: '' }, ...mustBe("the plugin's name") })),
    socket: Type.Optional(AbsolutePath({ description: "The pool IPAM service's unix socket (default /run/strait/ipam.sock)." })),
    default_ipv4_ippool: Type.Optional(PoolList('a list of pool names', 'Pools tried when no annotation names any, in order.')),
    default_ipv6_ippool: Type.Optional(PoolList('a list of pool names', 'Pools tried when no annotation names any, in order.')),
    detect_ip_conflict: Type.Optional(Flag('ARP/NDP probe for the chosen address before ADD returns (default true).')),
    detect_gateway: Type.Optional(Flag("ARP/NDP probe of the pool's gateway before ADD returns (default true).")),
  },
  { additionalProperties: false, ...mustBe('an object') },
);

export const CniNetworkConfigSchema = Type.Object({
  name: NetworkName(),
  ipam: CniIpamSchema,
});

/** CHECK's `prevResult`: what the runtime holds from ADD. */
export const CniPrevResultSchema = Type.Object(
  {
    ips: Type.Optional(
      List(Type.Object({ address: Type.String(mustBe('an address in CIDR notation')) }, mustBe('an object')), mustBe('a list')),
    ),
  },
  mustBe('an object'),
);

/** GC's `cni.dev/valid-attachments`: every allocation of the network not listed is released. */
export const CniValidAttachmentsSchema = List(
  Type.Object({ containerID: ContainerId(), ifname: InterfaceName() }, mustBe('an object {containerID, ifname}')),
  mustBe('a list of {containerID, ifname}'),
);

export type CniNetworkConfigDocument = Static<typeof CniNetworkConfigSchema>;
export type CniPrevResult = Static<typeof CniPrevResultSchema>;
export type CniValidAttachments = Static<typeof CniValidAttachmentsSchema>;

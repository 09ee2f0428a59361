/**
 * The IPAM state as the file store keeps it (a versioned JSON document): the home networks and, per
 * peer, where its networks sit here, how it sees ours, and the NatMappings toward it: its schema. A
 * loaded state is checked by the validator the build compiled from it, then its invariants (no overlaps,
 * sizes, one address per endpoint) by src/network-ipam/state-document.ts.
 */
import { type Static, Type } from '@sinclair/typebox';
import { ipamStateVersion } from './ipam-state-version';
import { CidrText, ClusterIdText, IpText, List, Strict } from './schema';

const CidrOrNull = (description: string) => Type.Union([CidrText(), Type.Null()], { description });

export const IpamStateSchema = Strict({
  version: Type.Literal(ipamStateVersion),
  home: Strict({
    podCIDR: CidrText(),
    serviceCIDR: Type.Optional(CidrText()),
    externalCIDR: CidrText(),
    reserved: List(CidrText()),
    pools: List(CidrText()),
  }),
  peers: List(
    Strict({
      clusterId: ClusterIdText(),
      podCIDR: CidrText({ description: 'As the peer numbers it.' }),
      externalCIDR: CidrText({ description: 'As the peer numbers it.' }),
      remotePodCIDR: CidrText({ description: 'As seen here.' }),
      remoteExternalCIDR: CidrText({ description: 'As seen here.' }),
      localNATPodCIDR: CidrOrNull('Our PodCIDR as the peer sees it; null until it answered.'),
      localNATExternalCIDR: CidrOrNull('Our ExternalCIDR as the peer sees it; null until it answered.'),
      natMappings: List(Strict({ externalIP: IpText(), endpointIP: IpText() })),
    }),
  ),
});

export type IpamStateDocument = Static<typeof IpamStateSchema>;

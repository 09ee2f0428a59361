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

const plane = {
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
};

/** The primary family's plane, and the secondary family's on a dual-stack cluster (src/network-ipam/planes.ts). */
export const IpamStateSchema = Strict({
  version: Type.Literal(ipamStateVersion),
  ...plane,
  secondary: Type.Optional(Strict(plane, { description: "The secondary IP family's plane: its home networks and peers." })),
});

export type IpamStateDocument = Static<typeof IpamStateSchema>;

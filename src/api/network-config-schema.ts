/** The NetworkConfig resource (network-config.ts): its spec and status schemas, their types, its CRD's columns. */
import { type Static, Type } from '@sinclair/typebox';
import type { ResourceDefinition } from './resource';
import { networkConfigNames } from './resource-names';
import { notRemapped } from './not-remapped';
import { CidrText, ClusterIdText, IpText, Port, StandbyAddresses, Strict } from './schema';

const CidrOrNone = (description: string) =>
  Type.Union([CidrText(), Type.Literal(notRemapped)], { description: `${description} "${notRemapped}": kept as the owner numbers it.` });

const GatewayEndpointSchema = Strict(
  {
    address: IpText(),
    port: Type.Optional(Port({ description: 'The VXLAN port (default 4789).' })),
    standbyAddresses: Type.Optional(StandbyAddresses()),
  },
  { description: "The owner's gateway: where the peer's gateway sends tunnel traffic." },
);

const networks = { podCIDR: CidrText(), externalCIDR: CidrText() };

export const NetworkConfigSpecSchema = Strict({
  clusterId: ClusterIdText({ description: 'The owner of the networks.' }),
  remoteClusterId: ClusterIdText({ description: 'The cluster this NetworkConfig is for.' }),
  ...networks,
  secondary: Type.Optional(
    Strict(networks, {
      description: "The owner's networks of its secondary IP family (dual-stack); podCIDR and externalCIDR are its primary family's.",
    }),
  ),
  endpoint: GatewayEndpointSchema,
});

const answer = {
  remappedPodCIDR: CidrOrNone("Where the receiver placed the owner's PodCIDR."),
  remappedExternalCIDR: CidrOrNone("Where the receiver placed the owner's ExternalCIDR."),
  observed: Strict(networks, {
    description: 'The spec networks this status answers: a status about networks the owner no longer has is never taken as the answer.',
  }),
};

// The answer mirrors the spec it answers: its own fields about the owner's primary family (absent where
// the receiver has no such family: an IPv6-only receiver of a dual-stack owner), `secondary` about the other.
const primaryAnswer = {
  remappedPodCIDR: Type.Optional(answer.remappedPodCIDR),
  remappedExternalCIDR: Type.Optional(answer.remappedExternalCIDR),
  observed: Type.Optional(answer.observed),
};

export const NetworkConfigStatusSchema = Strict({
  processed: Type.Boolean({ description: 'The receiver has placed the networks.' }),
  ...primaryAnswer,
  secondary: Type.Optional(
    Strict(answer, {
      description:
        "Where the receiver placed the owner's secondary family's networks; absent while it has not, or when it has no such family.",
    }),
  ),
});

export type GatewayEndpoint = Static<typeof GatewayEndpointSchema>;
export type NetworkConfigSpec = Static<typeof NetworkConfigSpecSchema>;
export type NetworkConfigStatus = Static<typeof NetworkConfigStatusSchema>;

export const networkConfigResource: ResourceDefinition<typeof NetworkConfigSpecSchema, typeof NetworkConfigStatusSchema> = {
  ...networkConfigNames,
  shortNames: ['snc'],
  description: "A cluster's networks offered to one peer (spec, by the owner) and where the peer placed them (status, by the receiver).",
  spec: NetworkConfigSpecSchema,
  status: NetworkConfigStatusSchema,
  columns: [
    { name: 'Owner', type: 'string', jsonPath: '.spec.clusterId' },
    { name: 'For', type: 'string', jsonPath: '.spec.remoteClusterId' },
    { name: 'PodCIDR', type: 'string', jsonPath: '.spec.podCIDR' },
    { name: 'ExternalCIDR', type: 'string', jsonPath: '.spec.externalCIDR' },
    { name: 'Processed', type: 'boolean', jsonPath: '.status.processed' },
    { name: 'Remapped Pod', type: 'string', jsonPath: '.status.remappedPodCIDR' },
    { name: 'Remapped External', type: 'string', jsonPath: '.status.remappedExternalCIDR', priority: 1 },
  ],
};

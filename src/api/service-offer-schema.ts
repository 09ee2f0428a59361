/**
 * The ServiceOffer resource (service-offer.ts): a Service one cluster exports (a ServiceExport of the
 * Multi-Cluster Services API), offered to one peer. The owner writes the spec into the peer's API server
 * (as its NetworkConfig); the peer's controller imports it and answers in the status. Named
 * `<owner>.<namespace>.<service>`.
 *
 * The endpoints are in the owner's own numbering: the importer translates them into its view of the
 * owner's PodCIDR (docs/services.md), so what the owner may list is bounded by what it owns.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { ResourceDefinition } from './resource';
import { serviceOfferNames } from './resource-names';
import { maxOfferedEndpoints, maxOfferedPorts } from './service-offer-limits';
import { ClusterIdText, Conditions, IpText, List, Port, Strict, StringEnum } from './schema';

const dnsLabel = (description: string) => Type.String({ format: 'dns-label', description });
const Protocol = () => StringEnum(['TCP', 'UDP', 'SCTP'], { description: 'TCP, UDP or SCTP.' });

const ServicePortSchema = Strict(
  {
    name: Type.Optional(dnsLabel("The port's name; required where the Service has more than one.")),
    protocol: Protocol(),
    port: Port({ description: 'The port the Service exposes.' }),
    appProtocol: Type.Optional(Type.String({ minLength: 1, maxLength: 316, description: "The application protocol (a label's syntax)." })),
  },
  { description: 'A port of the exported Service (core/v1 ServicePort without targetPort and nodePort).' },
);

const EndpointPortSchema = Strict(
  {
    name: Type.Optional(dnsLabel('The name of the Service port this is the target of.')),
    protocol: Protocol(),
    port: Port({ description: "The endpoints' port." }),
  },
  { description: 'A port of a group of endpoints (discovery/v1 EndpointPort).' },
);

const OfferedEndpointSchema = Strict(
  {
    address: IpText({ description: "The endpoint's address, in the owner's own numbering (a pod of its PodCIDR)." }),
    ready: Type.Boolean({ description: 'It takes new connections (EndpointConditions.ready).' }),
    serving: Type.Boolean({ description: 'It answers, terminating or not (EndpointConditions.serving).' }),
    terminating: Type.Boolean({ description: 'It is terminating (EndpointConditions.terminating).' }),
    hostname: Type.Optional(dnsLabel('Its DNS name under the Service, for a headless Service.')),
    zone: Type.Optional(Type.String({ minLength: 1, maxLength: 63, description: "The owner's zone of it." })),
  },
  { description: 'An endpoint of the exported Service.' },
);

const EndpointGroupSchema = Strict(
  {
    ports: List(EndpointPortSchema, { maxItems: maxOfferedPorts }),
    endpoints: List(OfferedEndpointSchema, { maxItems: maxOfferedEndpoints }),
  },
  { description: 'Endpoints that share their ports (as an EndpointSlice).' },
);

export const ServiceOfferSpecSchema = Strict({
  clusterId: ClusterIdText({ description: 'The exporting cluster.' }),
  remoteClusterId: ClusterIdText({ description: 'The cluster this offer is for.' }),
  namespace: dnsLabel("The Service's namespace."),
  name: Type.String({ format: 'service-name', description: "The Service's name." }),
  exportCreated: Type.String({
    format: 'date-time',
    description: "The ServiceExport's creationTimestamp: the oldest export wins a conflict (KEP-1645).",
  }),
  type: StringEnum(['ClusterSetIP', 'Headless'], { description: 'ClusterSetIP, or Headless for a Service without a cluster IP.' }),
  ports: List(ServicePortSchema, { maxItems: maxOfferedPorts }),
  sessionAffinity: StringEnum(['None', 'ClientIP'], { description: 'None or ClientIP.' }),
  sessionAffinityTimeoutSeconds: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 86400, description: 'With ClientIP: how long a client sticks to an endpoint.' }),
  ),
  endpointGroups: List(EndpointGroupSchema, { maxItems: 100 }),
});

export const ServiceOfferStatusSchema = Strict({
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0, description: 'The generation of the spec the conditions are about.' })),
  conditions: Type.Optional(Conditions()),
});

export type ServiceOfferSpec = Static<typeof ServiceOfferSpecSchema>;
export type ServiceOfferStatus = Static<typeof ServiceOfferStatusSchema>;
export type OfferedServicePort = Static<typeof ServicePortSchema>;
export type OfferedEndpointPort = Static<typeof EndpointPortSchema>;
export type OfferedEndpoint = Static<typeof OfferedEndpointSchema>;
export type EndpointGroup = Static<typeof EndpointGroupSchema>;

export const serviceOfferResource: ResourceDefinition<typeof ServiceOfferSpecSchema, typeof ServiceOfferStatusSchema> = {
  ...serviceOfferNames,
  shortNames: ['sso'],
  description:
    "A Service one cluster exports, offered to one peer (spec, by the owner, in the owner's numbering) and whether the peer imported it (status, by the receiver).",
  spec: ServiceOfferSpecSchema,
  status: ServiceOfferStatusSchema,
  columns: [
    { name: 'Owner', type: 'string', jsonPath: '.spec.clusterId' },
    { name: 'Namespace', type: 'string', jsonPath: '.spec.namespace' },
    { name: 'Service', type: 'string', jsonPath: '.spec.name' },
    { name: 'Type', type: 'string', jsonPath: '.spec.type' },
    { name: 'Imported', type: 'string', jsonPath: '.status.conditions[?(@.type=="Imported")].status' },
    { name: 'Reason', type: 'string', jsonPath: '.status.conditions[?(@.type=="Imported")].reason' },
    { name: 'Conflict', type: 'string', jsonPath: '.status.conditions[?(@.type=="Conflict")].status', priority: 1 },
    { name: 'Message', type: 'string', jsonPath: '.status.conditions[?(@.type=="Imported")].message', priority: 1 },
  ],
};

/**
 * The NodeDataplane resource: its spec and status schemas (TypeBox), their types, its CRD's columns.
 * Loaded by the build only: the processes check NodeDataplane documents with the validators compiled from
 * these schemas (compiled-validators.ts); node-dataplane.ts reads and writes the documents.
 */
import { type Static, Type } from '@sinclair/typebox';
import { maxStandbyGateways, peerTransports } from '../nodespec/spec';
import { dataplanes } from './dataplane';
import { type ResourceDefinition, objectSchema } from './resource';
import { nodeDataplaneNames } from './resource-names';
import {
  CidrText,
  ClusterIdText,
  Conditions,
  IpText,
  List,
  MacText,
  NodeNameText,
  Port,
  StandbyAddresses,
  StringEnum,
  Strict,
  TunnelMtu,
  Uint32,
} from './schema';

const Endpoint = Strict(
  { address: IpText(), port: Port(), standbyAddresses: Type.Optional(StandbyAddresses()) },
  { description: "The peer gateway's tunnel address and port. Absent on Kubernetes: the agent reads it from the StraitGateway." },
);

const peerFamilyNetworks = {
  remotePodCIDR: CidrText({ description: "The peer's PodCIDR as seen here." }),
  remoteExternalCIDR: CidrText({ description: "The peer's ExternalCIDR as seen here." }),
  localNATPodCIDR: CidrText({ description: 'Our PodCIDR (of the same family) as the peer sees it.' }),
  localNATExternalCIDR: CidrText({ description: 'Our ExternalCIDR (of the same family) as the peer sees it.' }),
};

const Peer = Strict({
  clusterId: ClusterIdText(),
  peerId: Uint32(1, { description: 'A stable number naming the peer in BPF maps and counters; 0 never names one.' }),
  ...peerFamilyNetworks,
  secondary: Type.Optional(
    Strict(peerFamilyNetworks, {
      description: "The peering's networks of the other IP family, where both clusters are dual-stack.",
    }),
  ),
  endpoint: Type.Optional(Endpoint),
  transport: StringEnum([...peerTransports], {
    description: 'vxlan, or ipsec (the kernel fallback only; keys from a per-peering secret, never from here).',
  }),
});

const NatMapping = Strict({
  externalAddress: IpText({ description: 'The address of our ExternalCIDR that peers dial.' }),
  endpointAddress: IpText({ description: 'The endpoint it stands for, as we see it (a local pod, or a pod of another peer).' }),
});

const ClusterNode = Strict({
  name: NodeNameText(),
  underlayAddress: IpText(),
  podCIDRs: List(CidrText(), { description: 'The pod networks the node hosts.' }),
});

const familyNetworks = {
  podCIDR: CidrText(),
  externalCIDR: CidrText({ description: 'Of the family of podCIDR.' }),
  transitAddress: IpText({ description: "The hub's source for transit traffic: an ExternalCIDR address the IPAM never hands out." }),
};

export const NodeDataplaneSpecSchema = Strict(
  {
    clusterId: ClusterIdText(),
    ...familyNetworks,
    secondary: Type.Optional(
      Strict(familyNetworks, {
        description:
          "The cluster's networks of its secondary IP family (dual-stack); podCIDR and the fields beside it are the primary family's.",
      }),
    ),
    node: Strict({
      name: NodeNameText(),
      role: Type.Optional(
        StringEnum(['gateway', 'worker'], {
          description: 'Whether this node is the active gateway; when given, it must agree with activeGateway. Absent on Kubernetes.',
        }),
      ),
      underlayAddress: IpText(),
      publicAddress: Type.Optional(IpText({ description: 'Where peers reach this node when it is the gateway.' })),
      gatewayCandidate: Type.Optional(
        Type.Boolean({
          description:
            'May be elected the gateway: its agent probes the other candidates and reports what answers (status gatewayProbes). Default false.',
        }),
      ),
    }),
    activeGateway: Type.Optional(
      Strict(
        { name: NodeNameText(), underlayAddress: IpText() },
        {
          description:
            "The node every other node sends cross-cluster traffic to. Absent on Kubernetes: the agent reads it from the cluster's StraitGateway, so a gateway move rewrites no NodeDataplane.",
        },
      ),
    ),
    standbyGateways: Type.Optional(
      List(NodeNameText(), {
        maxItems: maxStandbyGateways,
        description:
          "The other gateway candidates, in the order nodes fail over to them when the active gateway stops answering their probes. Absent on Kubernetes: the agent reads it from the cluster's StraitGateway.",
      }),
    ),
    overlay: Strict({
      vni: Type.Integer({ minimum: 0, maximum: 0xffffff, description: 'VNI of the intra-cluster overlay (never a peering VNI).' }),
      port: Port({ description: 'UDP port of every VXLAN device.' }),
      mac: MacText({ description: 'MAC address of every eBPF overlay device (unicast).' }),
    }),
    peers: List(Peer, { description: 'Sorted by clusterId.' }),
    natMappings: List(NatMapping, { description: 'Sorted by externalAddress.' }),
    tunnelMTU: Type.Optional(TunnelMtu()),
    nodes: Type.Optional(
      List(ClusterNode, {
        description:
          "Every node of the cluster, this one included, sorted by name. Absent on Kubernetes: each node's agent reads the Node objects itself, so a Node added rewrites no NodeDataplane.",
      }),
    ),
  },
  { description: 'What one node must program.' },
);

export const NodeDataplaneStatusSchema = Strict(
  {
    ready: Type.Boolean({ description: 'The datapath is loaded and the last reconcile succeeded.' }),
    time: Type.String({ format: 'date-time', description: 'When the agent wrote this (its heartbeat).' }),
    dataplane: StringEnum([...dataplanes]),
    specGeneration: Type.Integer({
      minimum: 0,
      description: 'How many distinct specs (as appliedSpec names them) this agent process has applied (0: none yet).',
    }),
    appliedSpec: Type.Optional(
      Type.String({
        pattern: '^[0-9a-f]{16}$',
        description:
          "A digest of the spec last applied in full (sha256 of its canonical JSON, 16 hex digits). On Kubernetes, of the object's own spec only: the node list and the gateways come from objects every node shares, and the agent's metric strait_agent_applied_spec_info names the whole spec it runs.",
      }),
    ),
    error: Type.Optional(Type.String({ description: 'Why the newest spec is not in force, or why applying failed.' })),
    validFor: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        maximum: 3600,
        description:
          "Written by an agent stopping on SIGTERM (a restart, an upgrade): seconds this last heartbeat keeps the node Ready when that is longer than the controller's heartbeat timeout, so that its successor's start does not fail the gateway over. A running agent's heartbeats have none.",
      }),
    ),
    gatewayProbes: Type.Optional(
      List(Strict({ name: NodeNameText(), verdict: StringEnum(['up', 'down']) }), {
        maxItems: maxStandbyGateways + 1,
        description:
          "A gateway candidate's probes of the cluster's other candidates (docs/liveness.md), by name: whether each one's datapath answers. The controller moves the gateway on these, not on an agent's heartbeat. Candidates never heard from are not listed.",
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
      }),
    ),
    conditions: Type.Optional(Conditions()),
  },
  { description: "The node's agent: written after every reconcile." },
);

export type NodeDataplaneSpecDocument = Static<typeof NodeDataplaneSpecSchema>;
export type ClusterNodeDocument = Static<typeof ClusterNode>;
export type NodeDataplaneStatus = Static<typeof NodeDataplaneStatusSchema>;

export const nodeDataplaneResource: ResourceDefinition<typeof NodeDataplaneSpecSchema, typeof NodeDataplaneStatusSchema> = {
  ...nodeDataplaneNames,
  shortNames: ['sdp'],
  description: 'What one node must program, and how its agent is doing. One per node, named after it.',
  spec: NodeDataplaneSpecSchema,
  status: NodeDataplaneStatusSchema,
  columns: [
    { name: 'Cluster', type: 'string', jsonPath: '.spec.clusterId' },
    { name: 'Candidate', type: 'boolean', jsonPath: '.spec.node.gatewayCandidate' },
    { name: 'Ready', type: 'boolean', jsonPath: '.status.ready' },
    { name: 'Dataplane', type: 'string', jsonPath: '.status.dataplane' },
    { name: 'Error', type: 'string', jsonPath: '.status.error', priority: 1 },
    { name: 'Heartbeat', type: 'date', jsonPath: '.status.time' },
  ],
};

export const NodeDataplaneObjectSchema = objectSchema(nodeDataplaneResource);

export type NodeDataplaneObjectDocument = Static<typeof NodeDataplaneObjectSchema>;

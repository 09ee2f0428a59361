/**
 * NodeDataplane: what one node must program (spec, written by the controller) and how its agent is
 * doing (status, the agent's heartbeat). One object per node, named after it. Both dataplanes take the
 * typed form (src/nodespec/spec.ts), made here once from a checked document and turned back into one
 * for writing.
 */
import { createHash } from 'node:crypto';
import { type Static, Type } from '@sinclair/typebox';
import { InputError } from '../errors';
import { type Cidr, type Ip, cidrsOverlap, containsIp, formatCidr, formatIp, parseCidr, parseIp, sameShape } from '../net/cidr';
import { type ClusterNodeSpec, type NodeDataplaneSpec, peerTransports } from '../nodespec/spec';
import { dataplanes } from '../probe/features';
import { type ResourceDefinition, makeObject, objectSchema } from './resource';
import { CidrText, ClusterIdText, Conditions, IpText, List, MacText, NodeNameText, Port, StringEnum, Strict, TunnelMtu, Uint32 } from './schema';
import { checkDocument } from './validate';

const Endpoint = Strict({ address: IpText(), port: Port() }, { description: "The peer gateway's tunnel address and port." });

const Peer = Strict({
  clusterId: ClusterIdText(),
  peerId: Uint32(1, { description: 'A stable number naming the peer in BPF maps and counters; 0 never names one.' }),
  remotePodCIDR: CidrText({ description: "The peer's PodCIDR as seen here." }),
  remoteExternalCIDR: CidrText({ description: "The peer's ExternalCIDR as seen here." }),
  localNATPodCIDR: CidrText({ description: 'Our PodCIDR as the peer sees it.' }),
  localNATExternalCIDR: CidrText({ description: 'Our ExternalCIDR as the peer sees it.' }),
  endpoint: Endpoint,
  transport: StringEnum([...peerTransports], { description: 'vxlan, or ipsec (the kernel fallback only; keys from a per-peering secret, never from here).' }),
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

export const NodeDataplaneSpecSchema = Strict(
  {
    clusterId: ClusterIdText(),
    podCIDR: CidrText(),
    externalCIDR: CidrText(),
    transitAddress: IpText({ description: "The hub's source for transit traffic: an ExternalCIDR address the IPAM never hands out." }),
    node: Strict({
      name: NodeNameText(),
      role: StringEnum(['gateway', 'worker']),
      underlayAddress: IpText(),
      publicAddress: Type.Optional(IpText({ description: 'Where peers reach this node when it is the gateway.' })),
      gatewayCandidate: Type.Optional(Type.Boolean({ description: 'May be elected the gateway: its agent reports on a fast heartbeat (a Lease). Default false.' })),
    }),
    activeGateway: Strict({ name: NodeNameText(), underlayAddress: IpText() }),
    overlay: Strict({
      vni: Type.Integer({ minimum: 0, maximum: 0xffffff, description: 'VNI of the intra-cluster overlay (never a peering VNI).' }),
      port: Port({ description: 'UDP port of every VXLAN device.' }),
      mac: MacText({ description: 'MAC address of every eBPF overlay device (unicast).' }),
    }),
    peers: List(Peer, { description: 'Sorted by clusterId.' }),
    natMappings: List(NatMapping, { description: 'Sorted by externalAddress.' }),
    tunnelMTU: Type.Optional(TunnelMtu()),
    nodes: Type.Optional(List(ClusterNode, {
      description: "Every node of the cluster, this one included, sorted by name. Absent on Kubernetes: each node's agent reads the Node objects itself, so a Node added rewrites no NodeDataplane.",
    })),
  },
  { description: 'What one node must program.' },
);

export const NodeDataplaneStatusSchema = Strict(
  {
    ready: Type.Boolean({ description: 'The datapath is loaded and the last reconcile succeeded.' }),
    time: Type.String({ format: 'date-time', description: 'When the agent wrote this (its heartbeat).' }),
    dataplane: StringEnum([...dataplanes]),
    specGeneration: Type.Integer({ minimum: 0, description: 'How many distinct specs this agent process has applied (0: none yet).' }),
    appliedSpec: Type.Optional(Type.String({ pattern: '^[0-9a-f]{16}$', description: 'A digest of the spec last applied in full (sha256 of its canonical JSON, 16 hex digits).' })),
    error: Type.Optional(Type.String({ description: 'Why the newest spec is not in force, or why applying failed.' })),
    conditions: Type.Optional(Conditions()),
  },
  { description: "The node's agent: written after every reconcile." },
);

/**
 * `status.appliedSpec`: a short digest of the spec's canonical text (`canonicalSpecText`; not a secret: it names a version). The same whether the spec came from
 * a file or the API server, and whatever the formatting or key order of the document.
 */
export const specDigest = (canonicalText: string) => createHash('sha256').update(canonicalText).digest('hex').slice(0, 16);

export type NodeDataplaneSpecDocument = Static<typeof NodeDataplaneSpecSchema>;
export type ClusterNodeDocument = Static<typeof ClusterNode>;
export type NodeDataplaneStatus = Static<typeof NodeDataplaneStatusSchema>;

export const nodeDataplaneResource: ResourceDefinition<typeof NodeDataplaneSpecSchema, typeof NodeDataplaneStatusSchema> = {
  kind: 'NodeDataplane',
  plural: 'nodedataplanes',
  shortNames: ['sdp'],
  description: 'What one node must program, and how its agent is doing. One per node, named after it.',
  spec: NodeDataplaneSpecSchema,
  status: NodeDataplaneStatusSchema,
  columns: [
    { name: 'Cluster', type: 'string', jsonPath: '.spec.clusterId' },
    { name: 'Role', type: 'string', jsonPath: '.spec.node.role' },
    { name: 'Gateway', type: 'string', jsonPath: '.spec.activeGateway.name' },
    { name: 'Ready', type: 'boolean', jsonPath: '.status.ready' },
    { name: 'Dataplane', type: 'string', jsonPath: '.status.dataplane' },
    { name: 'Error', type: 'string', jsonPath: '.status.error', priority: 1 },
    { name: 'Heartbeat', type: 'date', jsonPath: '.status.time' },
  ],
};

export const NodeDataplaneObjectSchema = objectSchema(nodeDataplaneResource);

function unique<T>(items: readonly T[], key: (item: T) => string | number | bigint, field: (i: number) => string): void {
  const seen = new Set<string | number | bigint>();
  items.forEach((item, i) => {
    const k = key(item);
    if (seen.has(k)) throw new InputError(field(i), typeof k === 'bigint' ? String(k) : k, 'appears twice');
    seen.add(k);
  });
}

/**
 * Our two networks, every peer's two remote networks and each peer's two views of ours must not overlap:
 * a destination would be translated or routed two ways.
 */
function disjointNetworks(spec: NodeDataplaneSpec, at: (field: string) => string): void {
  const taken: { field: string; cidr: Cidr }[] = [];
  const claim = (field: string, cidr: Cidr, among: { field: string; cidr: Cidr }[]) => {
    const clash = among.find((t) => cidrsOverlap(t.cidr, cidr));
    if (clash) throw new InputError(at(field), formatCidr(cidr), `overlaps ${clash.field} ${formatCidr(clash.cidr)}`);
    among.push({ field: at(field), cidr });
  };
  claim('podCIDR', spec.podCIDR, taken);
  claim('externalCIDR', spec.externalCIDR, taken);
  spec.peers.forEach((p, i) => {
    claim(`peers[${i}].remotePodCIDR`, p.remotePodCIDR, taken);
    claim(`peers[${i}].remoteExternalCIDR`, p.remoteExternalCIDR, taken);
    const views: { field: string; cidr: Cidr }[] = [];
    claim(`peers[${i}].localNATPodCIDR`, p.localNATPodCIDR, views);
    claim(`peers[${i}].localNATExternalCIDR`, p.localNATExternalCIDR, views);
  });
}

/**
 * The typed spec from a document (parsed JSON of a spec, `root` naming where it sits): the schema, then
 * what a schema cannot say (a transit address inside the ExternalCIDR and no mapping on it, our networks
 * and their views in a peer of one shape, networks that do not overlap, a unicast overlay MAC, unique
 * peers, mappings and nodes). The first problem throws.
 */
export function readNodeDataplaneSpec(value: unknown, root = 'spec'): NodeDataplaneSpec {
  const doc = checkDocument(NodeDataplaneSpecSchema, value, root);
  const at = (field: string) => (root === '' ? field : `${root}.${field}`);
  // A spec file lists the nodes; on Kubernetes the agent adds them from the Node objects before reading.
  if (doc.nodes === undefined) throw new InputError(at('nodes'), undefined, 'is required (on Kubernetes the agent adds the node list from the Node objects)');
  const cidr = (field: string, text: string): Cidr => parseCidr(at(field), text);
  const ip = (field: string, text: string): Ip => parseIp(at(field), text);
  const podCIDR = cidr('podCIDR', doc.podCIDR);
  const externalCIDR = cidr('externalCIDR', doc.externalCIDR);
  const transitAddress = ip('transitAddress', doc.transitAddress);
  if (!containsIp(externalCIDR, transitAddress)) throw new InputError(at('transitAddress'), doc.transitAddress, `is not in externalCIDR ${doc.externalCIDR}`);
  // Inner frames are addressed to it: a group address would be flooded, not delivered.
  if (parseInt(doc.overlay.mac.slice(0, 2), 16) & 1) throw new InputError(at('overlay.mac'), doc.overlay.mac, 'must be a unicast MAC address (lowest bit of the first octet clear)');
  const spec: NodeDataplaneSpec = {
    clusterId: doc.clusterId,
    podCIDR,
    externalCIDR,
    transitAddress,
    node: {
      name: doc.node.name,
      role: doc.node.role,
      underlayAddress: ip('node.underlayAddress', doc.node.underlayAddress),
      ...(doc.node.publicAddress !== undefined ? { publicAddress: ip('node.publicAddress', doc.node.publicAddress) } : {}),
      gatewayCandidate: doc.node.gatewayCandidate ?? false,
    },
    activeGateway: { name: doc.activeGateway.name, underlayAddress: ip('activeGateway.underlayAddress', doc.activeGateway.underlayAddress) },
    overlay: { ...doc.overlay, mac: doc.overlay.mac.toLowerCase() },
    peers: doc.peers.map((p, i) => {
      const field = `peers[${i}]`;
      const peer = {
        clusterId: p.clusterId,
        peerId: p.peerId,
        remotePodCIDR: cidr(`${field}.remotePodCIDR`, p.remotePodCIDR),
        remoteExternalCIDR: cidr(`${field}.remoteExternalCIDR`, p.remoteExternalCIDR),
        localNATPodCIDR: cidr(`${field}.localNATPodCIDR`, p.localNATPodCIDR),
        localNATExternalCIDR: cidr(`${field}.localNATExternalCIDR`, p.localNATExternalCIDR),
        endpoint: { address: ip(`${field}.endpoint.address`, p.endpoint.address), port: p.endpoint.port },
        transport: p.transport,
      };
      // The translation swaps network bits only: our networks and their views in the peer share a shape.
      if (!sameShape(podCIDR, peer.localNATPodCIDR)) throw new InputError(at(`${field}.localNATPodCIDR`), p.localNATPodCIDR, `must have the family and prefix length of podCIDR ${doc.podCIDR}`);
      if (!sameShape(externalCIDR, peer.localNATExternalCIDR)) throw new InputError(at(`${field}.localNATExternalCIDR`), p.localNATExternalCIDR, `must have the family and prefix length of externalCIDR ${doc.externalCIDR}`);
      return peer;
    }),
    natMappings: doc.natMappings.map((m, i) => {
      const externalAddress = ip(`natMappings[${i}].externalAddress`, m.externalAddress);
      if (!containsIp(externalCIDR, externalAddress)) throw new InputError(at(`natMappings[${i}].externalAddress`), m.externalAddress, `is not in externalCIDR ${doc.externalCIDR}`);
      return { externalAddress, endpointAddress: ip(`natMappings[${i}].endpointAddress`, m.endpointAddress) };
    }),
    nodes: doc.nodes.map((n, i) => ({
      name: n.name,
      underlayAddress: ip(`nodes[${i}].underlayAddress`, n.underlayAddress),
      podCIDRs: n.podCIDRs.map((c, j) => cidr(`nodes[${i}].podCIDRs[${j}]`, c)),
    })),
    ...(doc.tunnelMTU !== undefined ? { tunnelMTU: doc.tunnelMTU } : {}),
  };
  disjointNetworks(spec, at);
  spec.natMappings.forEach((m, i) => {
    if (m.externalAddress.value === transitAddress.value) throw new InputError(at(`natMappings[${i}].externalAddress`), formatIp(m.externalAddress), 'is the transitAddress, which the hub keeps for transit');
  });
  unique(spec.peers, (p) => p.clusterId, (i) => at(`peers[${i}].clusterId`));
  unique(spec.peers, (p) => p.peerId, (i) => at(`peers[${i}].peerId`));
  unique(spec.natMappings, (m) => m.externalAddress.value, (i) => at(`natMappings[${i}].externalAddress`));
  unique(spec.nodes, (n) => n.name, (i) => at(`nodes[${i}].name`));
  return spec;
}

/**
 * The document of a typed spec without its node list: what the controller stores in a NodeDataplane on
 * Kubernetes, where each agent reads the nodes from the Node objects (`writeClusterNodes` of them).
 */
export function writeNodeDataplaneSpecWithoutNodes(spec: NodeDataplaneSpec): Omit<NodeDataplaneSpecDocument, 'nodes'> {
  return {
    clusterId: spec.clusterId,
    podCIDR: formatCidr(spec.podCIDR),
    externalCIDR: formatCidr(spec.externalCIDR),
    transitAddress: formatIp(spec.transitAddress),
    node: {
      name: spec.node.name,
      role: spec.node.role,
      underlayAddress: formatIp(spec.node.underlayAddress),
      ...(spec.node.publicAddress !== undefined ? { publicAddress: formatIp(spec.node.publicAddress) } : {}),
      ...(spec.node.gatewayCandidate ? { gatewayCandidate: true } : {}),
    },
    activeGateway: { name: spec.activeGateway.name, underlayAddress: formatIp(spec.activeGateway.underlayAddress) },
    overlay: { ...spec.overlay },
    peers: spec.peers.map((p) => ({
      clusterId: p.clusterId,
      peerId: p.peerId,
      remotePodCIDR: formatCidr(p.remotePodCIDR),
      remoteExternalCIDR: formatCidr(p.remoteExternalCIDR),
      localNATPodCIDR: formatCidr(p.localNATPodCIDR),
      localNATExternalCIDR: formatCidr(p.localNATExternalCIDR),
      endpoint: { address: formatIp(p.endpoint.address), port: p.endpoint.port },
      transport: p.transport,
    })),
    natMappings: spec.natMappings.map((m) => ({ externalAddress: formatIp(m.externalAddress), endpointAddress: formatIp(m.endpointAddress) })),
    ...(spec.tunnelMTU !== undefined ? { tunnelMTU: spec.tunnelMTU } : {}),
  };
}

/** The document of a node list (`spec.nodes`). */
export const writeClusterNodes = (nodes: readonly ClusterNodeSpec[]): ClusterNodeDocument[] =>
  nodes.map((n) => ({ name: n.name, underlayAddress: formatIp(n.underlayAddress), podCIDRs: n.podCIDRs.map(formatCidr) }));

/** The document of a typed spec (canonical text: formatted addresses and networks), its node list last. */
export function writeNodeDataplaneSpec(spec: NodeDataplaneSpec): NodeDataplaneSpecDocument & { nodes: ClusterNodeDocument[] } {
  return { ...writeNodeDataplaneSpecWithoutNodes(spec), nodes: writeClusterNodes(spec.nodes) };
}

/** The spec's canonical text: what the agent compares to see a new spec, and digests (`specDigest`). */
export const canonicalSpecText = (spec: NodeDataplaneSpec) => JSON.stringify(writeNodeDataplaneSpec(spec));

/** A whole NodeDataplane object (as a file holds it, or the API server serves it): the typed spec, and the status as it is. */
export function readNodeDataplane(value: unknown): { name: string; spec: NodeDataplaneSpec; status?: NodeDataplaneStatus } {
  const object = checkDocument(NodeDataplaneObjectSchema, value) as { metadata: { name: string }; spec: unknown; status?: NodeDataplaneStatus };
  const spec = readNodeDataplaneSpec(object.spec, 'spec');
  if (spec.node.name !== object.metadata.name) throw new InputError('spec.node.name', spec.node.name, `must be the object's name ${object.metadata.name}: one NodeDataplane per node, named after it`);
  return { name: object.metadata.name, spec, ...(object.status ? { status: object.status } : {}) };
}

/** The object for a typed spec, named after its node. */
export const nodeDataplaneObject = (spec: NodeDataplaneSpec) => makeObject(nodeDataplaneResource, spec.node.name, writeNodeDataplaneSpec(spec));

/** A status document (the heartbeat file), checked. */
export const readNodeDataplaneStatus = (value: unknown, root = 'status'): NodeDataplaneStatus => checkDocument(NodeDataplaneStatusSchema, value, root);

/**
 * NodeDataplane: what one node must program (spec, written by the controller) and how its agent is
 * doing (status, the agent's heartbeat). One object per node, named after it. Both dataplanes take the
 * typed form (src/nodespec/spec.ts), made here once from a checked document and turned back into one
 * for writing. The schemas are in node-dataplane-resource.ts; the documents are checked here by the
 * validators the build compiled from them, so the agent loads neither TypeBox nor ajv's compiler.
 */
import { createHash } from 'node:crypto';
import { InputError } from '../errors';
import { type Cidr, type Ip, type IpFamily, containsIp, formatCidr, formatIp, parseCidr, parseIp, sameShape } from '../net/cidr';
import { RangeIndex } from '../net/range-index';
import type { ClusterNodeSpec, FamilyNetworks, NodeDataplaneSpec, PeerFamilyNetworks } from '../nodespec/spec';
import { checkCompiled } from './compiled-validators';
import { requireOtherFamily } from './secondary-family';
import type { ClusterNodeDocument, NodeDataplaneSpecDocument, NodeDataplaneStatus } from './node-dataplane-resource';
import type { StraitGatewaySpecDocument } from './strait-gateway-schema';

export type { ClusterNodeDocument, NodeDataplaneSpecDocument, NodeDataplaneStatus } from './node-dataplane-resource';

/**
 * A short digest of a spec's canonical text (`canonicalSpecText`, or `canonicalObjectSpecText` of its
 * object's own part; not a secret: it names a version): `status.appliedSpec` and the agent's
 * `strait_agent_applied_spec_info`. The same whatever the formatting or key order of the document.
 */
export const specDigest = (canonicalText: string) => createHash('sha256').update(canonicalText).digest('hex').slice(0, 16);

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
 * a destination would be translated or routed two ways. Found by a binary search per network, so a
 * spec with thousands of peers is checked in milliseconds, not seconds.
 */
function disjointNetworks(spec: NodeDataplaneSpec, at: (field: string) => string): void {
  const taken = new RangeIndex<string>();
  const claim = (field: string, cidr: Cidr, among: RangeIndex<string>) => {
    const clash = among.overlapping(cidr)[0];
    if (clash !== undefined) throw new InputError(at(field), formatCidr(cidr), `overlaps ${clash}`);
    among.add(cidr, `${at(field)} ${formatCidr(cidr)}`);
  };
  for (const [prefix, home] of familyParts(spec)) {
    claim(`${prefix}podCIDR`, home.podCIDR, taken);
    claim(`${prefix}externalCIDR`, home.externalCIDR, taken);
  }
  spec.peers.forEach((p, i) => {
    const views = new RangeIndex<string>();
    for (const [prefix, networks] of familyParts(p)) {
      claim(`peers[${i}].${prefix}remotePodCIDR`, networks.remotePodCIDR, taken);
      claim(`peers[${i}].${prefix}remoteExternalCIDR`, networks.remoteExternalCIDR, taken);
      claim(`peers[${i}].${prefix}localNATPodCIDR`, networks.localNATPodCIDR, views);
      claim(`peers[${i}].${prefix}localNATExternalCIDR`, networks.localNATExternalCIDR, views);
    }
  });
}

/** The primary family's networks (the object's own fields) and the secondary's, with their field prefixes. */
function familyParts<T extends object>(whole: T & { secondary?: T }): [string, T][] {
  return whole.secondary
    ? [
        ['', whole],
        ['secondary.', whole.secondary],
      ]
    : [['', whole]];
}

/**
 * The cluster's nodes: each node's pod CIDRs inside the cluster's podCIDR and no two nodes' overlapping
 * (a pod lives on one node: its routes would go two ways), and the active gateway one of them, at its
 * underlay address (the node every other one sends cross-cluster traffic to).
 */
function consistentNodes(spec: NodeDataplaneSpec, at: (field: string) => string): void {
  const taken = new RangeIndex<{ node: string; field: string }>();
  spec.nodes.forEach((node, i) =>
    node.podCIDRs.forEach((cidr, j) => {
      const field = at(`nodes[${i}].podCIDRs[${j}]`);
      const podCIDR = familyParts(spec).find(([, n]) => n.podCIDR.family === cidr.family)?.[1].podCIDR;
      if (!podCIDR) throw new InputError(field, formatCidr(cidr), `is IPv${cidr.family}, a family the cluster has no podCIDR of`);
      if (cidr.prefix < podCIDR.prefix || !containsIp(podCIDR, { family: cidr.family, value: cidr.base })) {
        throw new InputError(field, formatCidr(cidr), `is not inside podCIDR ${formatCidr(podCIDR)}`);
      }
      const clash = taken.overlapping(cidr).find((owner) => owner.node !== node.name);
      if (clash) throw new InputError(field, formatCidr(cidr), `overlaps ${clash.field}; a pod lives on one node`);
      taken.add(cidr, { node: node.name, field: `${field} ${formatCidr(cidr)}` });
    }),
  );
  const gateway = spec.nodes.find((n) => n.name === spec.activeGateway.name);
  if (!gateway) throw new InputError(at('activeGateway.name'), spec.activeGateway.name, 'is not one of the nodes');
  if (
    gateway.underlayAddress.value !== spec.activeGateway.underlayAddress.value ||
    gateway.underlayAddress.family !== spec.activeGateway.underlayAddress.family
  ) {
    throw new InputError(
      at('activeGateway.underlayAddress'),
      formatIp(spec.activeGateway.underlayAddress),
      `is not node ${gateway.name}'s underlayAddress ${formatIp(gateway.underlayAddress)}`,
    );
  }
  spec.standbyGateways.forEach((name, i) => {
    const field = at(`standbyGateways[${i}]`);
    if (!spec.nodes.some((n) => n.name === name)) throw new InputError(field, name, 'is not one of the nodes');
    if (name === spec.activeGateway.name) throw new InputError(field, name, 'is the activeGateway, not a standby');
    if (spec.standbyGateways.indexOf(name) !== i)
      throw new InputError(field, name, `repeats standbyGateways[${spec.standbyGateways.indexOf(name)}]`);
  });
}

type FamilyNetworksDocument = Pick<NodeDataplaneSpecDocument, 'podCIDR' | 'externalCIDR' | 'transitAddress'>;
type PeerFamilyNetworksDocument = Pick<NodeDataplaneSpecDocument['peers'][number], keyof PeerFamilyNetworks>;

/** One family's home networks: an ExternalCIDR of the PodCIDR's family, the transit address inside it. */
function readFamilyNetworks(doc: FamilyNetworksDocument, at: (field: string) => string, prefix: string): FamilyNetworks {
  const podCIDR = parseCidr(at(`${prefix}podCIDR`), doc.podCIDR);
  const externalCIDR = parseCidr(at(`${prefix}externalCIDR`), doc.externalCIDR);
  if (externalCIDR.family !== podCIDR.family)
    throw new InputError(at(`${prefix}externalCIDR`), doc.externalCIDR, `must be IPv${podCIDR.family}, as podCIDR ${doc.podCIDR} is`);
  const transitAddress = parseIp(at(`${prefix}transitAddress`), doc.transitAddress);
  if (!containsIp(externalCIDR, transitAddress))
    throw new InputError(at(`${prefix}transitAddress`), doc.transitAddress, `is not in ${prefix}externalCIDR ${doc.externalCIDR}`);
  return { podCIDR, externalCIDR, transitAddress };
}

/**
 * One family's networks of a peering: of a family the home cluster has, all four of it, and our networks'
 * views of our networks' shape (the translation swaps network bits only).
 */
function readPeerFamilyNetworks(
  doc: PeerFamilyNetworksDocument,
  at: (field: string) => string,
  prefix: string,
  homeOf: (family: IpFamily) => FamilyNetworks | undefined,
): PeerFamilyNetworks {
  const read = (name: keyof PeerFamilyNetworks) => parseCidr(at(`${prefix}${name}`), doc[name]);
  const networks: PeerFamilyNetworks = {
    remotePodCIDR: read('remotePodCIDR'),
    remoteExternalCIDR: read('remoteExternalCIDR'),
    localNATPodCIDR: read('localNATPodCIDR'),
    localNATExternalCIDR: read('localNATExternalCIDR'),
  };
  const family = networks.remotePodCIDR.family;
  const home = homeOf(family);
  if (!home)
    throw new InputError(at(`${prefix}remotePodCIDR`), doc.remotePodCIDR, `is IPv${family}, a family the cluster has no podCIDR of`);
  if (networks.remoteExternalCIDR.family !== family)
    throw new InputError(
      at(`${prefix}remoteExternalCIDR`),
      doc.remoteExternalCIDR,
      `must be IPv${family}, as remotePodCIDR ${doc.remotePodCIDR} is`,
    );
  const ours = { localNATPodCIDR: ['podCIDR', home.podCIDR], localNATExternalCIDR: ['externalCIDR', home.externalCIDR] } as const;
  for (const [name, [ownName, own]] of Object.entries(ours) as [keyof typeof ours, (typeof ours)[keyof typeof ours]][]) {
    if (!sameShape(own, networks[name]))
      throw new InputError(at(`${prefix}${name}`), doc[name], `must have the family and prefix length of ${ownName} ${formatCidr(own)}`);
  }
  return networks;
}

/**
 * The typed spec from a document (parsed JSON of a spec, `root` naming where it sits): the schema, then
 * what a schema cannot say (a transit address inside the ExternalCIDR and no mapping on it, our networks
 * and their views in a peer of one shape, networks that do not overlap, a unicast overlay MAC, unique
 * peers, mappings and nodes). The first problem throws.
 */
export function readNodeDataplaneSpec(value: unknown, root = 'spec'): NodeDataplaneSpec {
  const doc = checkCompiled('nodeDataplaneSpec', value, root);
  const at = (field: string) => (root === '' ? field : `${root}.${field}`);
  // A spec file holds everything; on Kubernetes the agent adds the node list from the Node objects and
  // the gateways from the cluster's StraitGateway before reading (k8s/node-list.ts, k8s/gateway-view.ts).
  if (doc.nodes === undefined)
    throw new InputError(at('nodes'), undefined, 'is required (on Kubernetes the agent adds the node list from the Node objects)');
  const fromGateways = '(on Kubernetes the agent adds it from the StraitGateway named after the cluster)';
  const activeGateway = doc.activeGateway;
  if (activeGateway === undefined) throw new InputError(at('activeGateway'), undefined, `is required ${fromGateways}`);
  const role = doc.node.name === activeGateway.name ? 'gateway' : 'worker';
  const cidr = (field: string, text: string): Cidr => parseCidr(at(field), text);
  const ip = (field: string, text: string): Ip => parseIp(at(field), text);
  const primary = readFamilyNetworks(doc, at, '');
  const secondary = doc.secondary && readFamilyNetworks(doc.secondary, at, 'secondary.');
  if (secondary) requireOtherFamily([at('podCIDR'), primary.podCIDR], [at('secondary.podCIDR'), secondary.podCIDR]);
  const homeOf = (family: IpFamily) => [primary, secondary].find((n) => n?.podCIDR.family === family);
  // Inner frames are addressed to it: a group address would be flooded, not delivered.
  if (parseInt(doc.overlay.mac.slice(0, 2), 16) & 1)
    throw new InputError(at('overlay.mac'), doc.overlay.mac, 'must be a unicast MAC address (lowest bit of the first octet clear)');
  const spec: NodeDataplaneSpec = {
    clusterId: doc.clusterId,
    ...primary,
    ...(secondary ? { secondary } : {}),
    node: {
      name: doc.node.name,
      role,
      underlayAddress: ip('node.underlayAddress', doc.node.underlayAddress),
      ...(doc.node.publicAddress !== undefined ? { publicAddress: ip('node.publicAddress', doc.node.publicAddress) } : {}),
      gatewayCandidate: doc.node.gatewayCandidate ?? false,
    },
    activeGateway: {
      name: activeGateway.name,
      underlayAddress: ip('activeGateway.underlayAddress', activeGateway.underlayAddress),
    },
    standbyGateways: [...(doc.standbyGateways ?? [])],
    overlay: { ...doc.overlay, mac: doc.overlay.mac.toLowerCase() },
    peers: doc.peers.map((p, i) => {
      const field = `peers[${i}]`;
      if (p.endpoint === undefined) throw new InputError(at(`${field}.endpoint`), undefined, `is required ${fromGateways}`);
      const own = readPeerFamilyNetworks(p, at, `${field}.`, homeOf);
      const other = p.secondary && readPeerFamilyNetworks(p.secondary, at, `${field}.secondary.`, homeOf);
      if (other)
        requireOtherFamily(
          [at(`${field}.remotePodCIDR`), own.remotePodCIDR],
          [at(`${field}.secondary.remotePodCIDR`), other.remotePodCIDR],
        );
      return {
        clusterId: p.clusterId,
        peerId: p.peerId,
        ...own,
        ...(other ? { secondary: other } : {}),
        endpoint: {
          address: ip(`${field}.endpoint.address`, p.endpoint.address),
          port: p.endpoint.port,
          standbyAddresses: (p.endpoint.standbyAddresses ?? []).map((a, j) => ip(`${field}.endpoint.standbyAddresses[${j}]`, a)),
        },
        transport: p.transport,
      };
    }),
    natMappings: doc.natMappings.map((m, i) => {
      const externalAddress = ip(`natMappings[${i}].externalAddress`, m.externalAddress);
      const externalCIDR = homeOf(externalAddress.family)?.externalCIDR;
      if (!externalCIDR || !containsIp(externalCIDR, externalAddress))
        throw new InputError(
          at(`natMappings[${i}].externalAddress`),
          m.externalAddress,
          `is not in ${[primary, secondary].flatMap((n) => (n ? [`externalCIDR ${formatCidr(n.externalCIDR)}`] : [])).join(' nor ')}`,
        );
      const endpointAddress = ip(`natMappings[${i}].endpointAddress`, m.endpointAddress);
      if (endpointAddress.family !== externalAddress.family)
        throw new InputError(
          at(`natMappings[${i}].endpointAddress`),
          m.endpointAddress,
          `must be IPv${externalAddress.family}, as externalAddress ${m.externalAddress} is: a mapping translates within one family`,
        );
      return { externalAddress, endpointAddress };
    }),
    nodes: doc.nodes.map((n, i) => ({
      name: n.name,
      underlayAddress: ip(`nodes[${i}].underlayAddress`, n.underlayAddress),
      podCIDRs: n.podCIDRs.map((c, j) => cidr(`nodes[${i}].podCIDRs[${j}]`, c)),
    })),
    ...(doc.tunnelMTU !== undefined ? { tunnelMTU: doc.tunnelMTU } : {}),
  };
  disjointNetworks(spec, at);
  consistentNodes(spec, at);
  if (doc.node.role !== undefined && doc.node.role !== role)
    throw new InputError(at('node.role'), doc.node.role, `must be ${role}: activeGateway is ${activeGateway.name}`);
  spec.natMappings.forEach((m, i) => {
    const transitAddress = homeOf(m.externalAddress.family)?.transitAddress;
    if (m.externalAddress.value === transitAddress?.value)
      throw new InputError(
        at(`natMappings[${i}].externalAddress`),
        formatIp(m.externalAddress),
        'is the transitAddress, which the hub keeps for transit',
      );
  });
  unique(
    spec.peers,
    (p) => p.clusterId,
    (i) => at(`peers[${i}].clusterId`),
  );
  unique(
    spec.peers,
    (p) => p.peerId,
    (i) => at(`peers[${i}].peerId`),
  );
  unique(
    spec.natMappings,
    (m) => m.externalAddress.value,
    (i) => at(`natMappings[${i}].externalAddress`),
  );
  unique(
    spec.nodes,
    (n) => n.name,
    (i) => at(`nodes[${i}].name`),
  );
  return spec;
}

/**
 * The document of a typed spec without what is the same on every node and changes with the cluster:
 * what the controller stores in a NodeDataplane on Kubernetes. Each agent adds the node list from the
 * Node objects (`writeClusterNodes` of them) and the gateways, ours and each peer's, from the cluster's
 * StraitGateway (`writeGateways`): a Node added or a gateway moved rewrites no NodeDataplane.
 */
export function writeNodeDataplaneObjectSpec(spec: NodeDataplaneSpec): NodeDataplaneSpecDocument {
  const { activeGateway: _gateway, standbyGateways: _standby, node, peers, ...rest } = writeSpecWithoutNodes(spec);
  const { role: _role, ...self } = node;
  return { ...rest, node: self, peers: peers.map(({ endpoint: _endpoint, ...peer }) => peer) };
}

/** The gateways of a typed spec: ours and each peer's (a StraitGateway's spec; the same in every node's spec). */
export const writeGateways = (spec: NodeDataplaneSpec): StraitGatewaySpecDocument => ({
  activeGateway: { name: spec.activeGateway.name, underlayAddress: formatIp(spec.activeGateway.underlayAddress) },
  ...(spec.standbyGateways.length > 0 ? { standbyGateways: [...spec.standbyGateways] } : {}),
  peers: spec.peers.map((p) => ({ clusterId: p.clusterId, endpoint: writeEndpoint(p.endpoint) })),
});

const writeEndpoint = (e: NodeDataplaneSpec['peers'][number]['endpoint']) => ({
  address: formatIp(e.address),
  port: e.port,
  ...(e.standbyAddresses.length > 0 ? { standbyAddresses: e.standbyAddresses.map(formatIp) } : {}),
});

const writeFamilyNetworks = (n: FamilyNetworks): FamilyNetworksDocument => ({
  podCIDR: formatCidr(n.podCIDR),
  externalCIDR: formatCidr(n.externalCIDR),
  transitAddress: formatIp(n.transitAddress),
});

const writePeerFamilyNetworks = (n: PeerFamilyNetworks): PeerFamilyNetworksDocument => ({
  remotePodCIDR: formatCidr(n.remotePodCIDR),
  remoteExternalCIDR: formatCidr(n.remoteExternalCIDR),
  localNATPodCIDR: formatCidr(n.localNATPodCIDR),
  localNATExternalCIDR: formatCidr(n.localNATExternalCIDR),
});

/** The document of a typed spec without its node list (`writeNodeDataplaneSpec` adds it). */
function writeSpecWithoutNodes(spec: NodeDataplaneSpec): Omit<WholeNodeDataplaneSpecDocument, 'nodes'> {
  return {
    clusterId: spec.clusterId,
    ...writeFamilyNetworks(spec),
    ...(spec.secondary ? { secondary: writeFamilyNetworks(spec.secondary) } : {}),
    node: {
      name: spec.node.name,
      role: spec.node.role,
      underlayAddress: formatIp(spec.node.underlayAddress),
      ...(spec.node.publicAddress !== undefined ? { publicAddress: formatIp(spec.node.publicAddress) } : {}),
      ...(spec.node.gatewayCandidate ? { gatewayCandidate: true } : {}),
    },
    activeGateway: { name: spec.activeGateway.name, underlayAddress: formatIp(spec.activeGateway.underlayAddress) },
    ...(spec.standbyGateways.length > 0 ? { standbyGateways: [...spec.standbyGateways] } : {}),
    overlay: { ...spec.overlay },
    peers: spec.peers.map((p) => ({
      clusterId: p.clusterId,
      peerId: p.peerId,
      ...writePeerFamilyNetworks(p),
      ...(p.secondary ? { secondary: writePeerFamilyNetworks(p.secondary) } : {}),
      endpoint: writeEndpoint(p.endpoint),
      transport: p.transport,
    })),
    natMappings: spec.natMappings.map((m) => ({
      externalAddress: formatIp(m.externalAddress),
      endpointAddress: formatIp(m.endpointAddress),
    })),
    ...(spec.tunnelMTU !== undefined ? { tunnelMTU: spec.tunnelMTU } : {}),
  };
}

type PeerDocument = NodeDataplaneSpecDocument['peers'][number];

/** A spec document with nothing left for an agent to add: as a spec file holds it and `writeNodeDataplaneSpec` writes it. */
export type WholeNodeDataplaneSpecDocument = Omit<NodeDataplaneSpecDocument, 'node' | 'activeGateway' | 'peers' | 'nodes'> & {
  node: NodeDataplaneSpecDocument['node'] & { role: NodeDataplaneSpec['node']['role'] };
  activeGateway: NonNullable<NodeDataplaneSpecDocument['activeGateway']>;
  peers: (PeerDocument & { endpoint: NonNullable<PeerDocument['endpoint']> })[];
  nodes: ClusterNodeDocument[];
};

/** The document of a node list (`spec.nodes`). */
export const writeClusterNodes = (nodes: readonly ClusterNodeSpec[]): ClusterNodeDocument[] =>
  nodes.map((n) => ({ name: n.name, underlayAddress: formatIp(n.underlayAddress), podCIDRs: n.podCIDRs.map(formatCidr) }));

/** The document of a typed spec (canonical text: formatted addresses and networks), its node list last. */
export function writeNodeDataplaneSpec(spec: NodeDataplaneSpec): WholeNodeDataplaneSpecDocument {
  return { ...writeSpecWithoutNodes(spec), nodes: writeClusterNodes(spec.nodes) };
}

/** The spec's canonical text: what the agent compares to see a new spec, and digests (`specDigest`). */
export const canonicalSpecText = (spec: NodeDataplaneSpec) => JSON.stringify(writeNodeDataplaneSpec(spec));

/**
 * The canonical text of what a NodeDataplane object holds on Kubernetes (`writeNodeDataplaneObjectSpec`):
 * what an agent's status acknowledges there, so a gateway move or a Node added costs no status write.
 */
export const canonicalObjectSpecText = (spec: NodeDataplaneSpec) => JSON.stringify(writeNodeDataplaneObjectSpec(spec));

/** A whole NodeDataplane object (as a file holds it, or the API server serves it): the typed spec, and the status as it is. */
export function readNodeDataplane(value: unknown): { name: string; spec: NodeDataplaneSpec; status?: NodeDataplaneStatus } {
  const object = checkCompiled('nodeDataplaneObject', value);
  const spec = readNodeDataplaneSpec(object.spec, 'spec');
  if (spec.node.name !== object.metadata.name)
    throw new InputError(
      'spec.node.name',
      spec.node.name,
      `must be the object's name ${object.metadata.name}: one NodeDataplane per node, named after it`,
    );
  return { name: object.metadata.name, spec, ...(object.status ? { status: object.status } : {}) };
}

/** A status document (the heartbeat file), checked. */
export const readNodeDataplaneStatus = (value: unknown, root = 'status'): NodeDataplaneStatus =>
  checkCompiled('nodeDataplaneStatus', value, root);

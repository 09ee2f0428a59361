/**
 * The NodeDataplane specs the tests program, one set for every suite: node n1 of cluster a (home
 * 10.0.0.0/16 with peers of the same and of other prefix lengths), and hub B as the planner plans it.
 * Each comes as a document (what a file or the API server holds) and typed through the document's reader.
 */
import { type NodeDataplaneSpecDocument, type WholeNodeDataplaneSpecDocument, readNodeDataplaneSpec } from '../../src/api/node-dataplane';
import { makeObject } from '../../src/api/object';
import { nodeDataplaneNames } from '../../src/api/resource-names';
import type { NodeDataplaneSpec } from '../../src/nodespec/spec';

type PeerDocument = WholeNodeDataplaneSpecDocument['peers'][number];

export const peerB: PeerDocument = {
  clusterId: 'b',
  peerId: 5,
  remotePodCIDR: '10.1.0.0/16',
  remoteExternalCIDR: '10.60.0.0/24',
  localNATPodCIDR: '172.16.0.0/16',
  localNATExternalCIDR: '172.17.0.0/24',
  endpoint: { address: '203.0.113.2', port: 4789 },
  transport: 'vxlan',
};

export const peerC: PeerDocument = {
  clusterId: 'c',
  peerId: 7,
  remotePodCIDR: '10.2.0.0/20',
  remoteExternalCIDR: '10.70.0.0/26',
  localNATPodCIDR: '172.18.0.0/16',
  localNATExternalCIDR: '172.19.0.0/24',
  endpoint: { address: '203.0.113.3', port: 4789 },
  transport: 'vxlan',
};

/** The spec of node n1 as a document (what a file or the API server holds). */
export const nodeSpecDocument = (peers: PeerDocument[] = [peerB]): WholeNodeDataplaneSpecDocument => ({
  clusterId: 'a',
  podCIDR: '10.0.0.0/16',
  externalCIDR: '10.50.0.0/24',
  transitAddress: '10.50.0.254',
  node: { name: 'n1', role: 'gateway', underlayAddress: '192.0.2.11' },
  activeGateway: { name: 'n1', underlayAddress: '192.0.2.11' },
  overlay: { vni: 18952, port: 4789, mac: '02:53:54:00:00:01' },
  peers,
  natMappings: [{ externalAddress: '10.50.0.10', endpointAddress: '10.0.0.5' }],
  nodes: [{ name: 'n1', underlayAddress: '192.0.2.11', podCIDRs: ['10.0.0.0/24'] }],
});

/** The same, typed (through the document's own reader). */
export const nodeSpec = (peers?: PeerDocument[]): NodeDataplaneSpec => readNodeDataplaneSpec(nodeSpecDocument(peers));

/** A NodeDataplane object holding `doc`, named after its node (what the API server is given). */
export const nodeObject = (doc: NodeDataplaneSpecDocument) => makeObject(nodeDataplaneNames, doc.node.name, doc);

/** The text of a spec file holding `doc`. */
export const specFileText = (doc: NodeDataplaneSpecDocument): string => JSON.stringify(nodeObject(doc));

/** Hub B as the planner plans it (test/nodespec/plan.test.ts): A remapped, C remapped, one NatMapping. */
export const hubSpecDocument = (): WholeNodeDataplaneSpecDocument => ({
  clusterId: 'cluster-b',
  podCIDR: '10.0.0.0/16',
  externalCIDR: '10.50.0.0/24',
  transitAddress: '10.50.0.254',
  node: { name: 'b-gw', role: 'gateway', underlayAddress: '192.0.2.11' },
  activeGateway: { name: 'b-gw', underlayAddress: '192.0.2.11' },
  overlay: { vni: 18952, port: 4789, mac: '02:53:54:00:00:01' },
  peers: [
    {
      clusterId: 'cluster-a',
      peerId: 7,
      remotePodCIDR: '10.1.0.0/16',
      remoteExternalCIDR: '10.60.0.0/24',
      localNATPodCIDR: '172.16.0.0/16',
      localNATExternalCIDR: '172.17.0.0/24',
      endpoint: { address: '203.0.113.1', port: 4789 },
      transport: 'vxlan',
    },
    {
      clusterId: 'cluster-c',
      peerId: 9,
      remotePodCIDR: '10.2.0.0/20',
      remoteExternalCIDR: '10.70.0.0/24',
      localNATPodCIDR: '192.168.0.0/16',
      localNATExternalCIDR: '10.90.0.0/24',
      endpoint: { address: '203.0.113.3', port: 4789 },
      transport: 'vxlan',
    },
  ],
  natMappings: [{ externalAddress: '10.50.0.1', endpointAddress: '10.2.0.5' }],
  nodes: [
    { name: 'b-gw', underlayAddress: '192.0.2.11', podCIDRs: ['10.0.0.0/24'] },
    { name: 'b-worker', underlayAddress: '192.0.2.12', podCIDRs: ['10.0.1.0/24'] },
  ],
});

/** The same, typed (through the document's own reader). */
export const hubSpec = (): NodeDataplaneSpec => readNodeDataplaneSpec(hubSpecDocument());

/*
 * `doc` (the hub's, or one made from it) dual-stack: the same roles in IPv6, with prefixes of three
 * lengths. We are fd00:10::/56 + fd00:50::/120 (transit fd00:50::fe); A is fd00:11::/56 + fd00:60::/120
 * here, we are fd01:16::/56 + fd01:17::/120 there; C is fd00:12::/60 + fd00:70::/120 here, we are
 * fd02:168::/56 + fd00:90::/120 there. NatMappings: fd00:50::1 is our pod fd00:10::6, fd00:50::2 C's pod
 * fd00:12::5.
 */
export function withIpv6<T extends NodeDataplaneSpecDocument>(doc: T): T {
  doc.secondary = { podCIDR: 'fd00:10::/56', externalCIDR: 'fd00:50::/120', transitAddress: 'fd00:50::fe' };
  doc.peers[0]!.secondary = {
    remotePodCIDR: 'fd00:11::/56',
    remoteExternalCIDR: 'fd00:60::/120',
    localNATPodCIDR: 'fd01:16::/56',
    localNATExternalCIDR: 'fd01:17::/120',
  };
  doc.peers[1]!.secondary = {
    remotePodCIDR: 'fd00:12::/60',
    remoteExternalCIDR: 'fd00:70::/120',
    localNATPodCIDR: 'fd02:168::/56',
    localNATExternalCIDR: 'fd00:90::/120',
  };
  doc.natMappings.push(
    { externalAddress: 'fd00:50::1', endpointAddress: 'fd00:10::6' },
    { externalAddress: 'fd00:50::2', endpointAddress: 'fd00:12::5' },
  );
  doc.nodes?.[0]?.podCIDRs.push('fd00:10::/64');
  doc.nodes?.[1]?.podCIDRs.push('fd00:10:0:1::/64');
  return doc;
}

/** `doc` with `edit` made to it, typed through the reader. */
export function specWith(doc: WholeNodeDataplaneSpecDocument, edit: (doc: WholeNodeDataplaneSpecDocument) => void): NodeDataplaneSpec {
  edit(doc);
  return readNodeDataplaneSpec(doc);
}

/** The hub's spec with `edit` made to its document, typed through the reader. */
export const hubSpecWith = (edit: (doc: WholeNodeDataplaneSpecDocument) => void): NodeDataplaneSpec => specWith(hubSpecDocument(), edit);

/**
 * Hub B dual-stack: IPv6 as the secondary family, A remapped in IPv6 too (other prefix lengths than
 * ours), C not remapped; an IPv6 NatMapping and IPv6 pod prefixes per node.
 */
export const dualStackHubSpecDocument = (): WholeNodeDataplaneSpecDocument => {
  const doc = hubSpecDocument();
  doc.secondary = { podCIDR: 'fd00:b::/48', externalCIDR: 'fd00:b:e::/112', transitAddress: 'fd00:b:e::fe' };
  doc.peers[0]!.secondary = {
    remotePodCIDR: 'fd00:a::/56',
    remoteExternalCIDR: 'fd00:a:e::/120',
    localNATPodCIDR: 'fd60:b::/48',
    localNATExternalCIDR: 'fd70:b:e::/112',
  };
  doc.peers[1]!.secondary = {
    remotePodCIDR: 'fd00:c::/64',
    remoteExternalCIDR: 'fd00:c:e::/116',
    localNATPodCIDR: 'fd00:b::/48',
    localNATExternalCIDR: 'fd00:b:e::/112',
  };
  doc.natMappings.push({ externalAddress: 'fd00:b:e::1', endpointAddress: 'fd00:c::5' });
  doc.nodes![0]!.podCIDRs.push('fd00:b:0:0::/64');
  doc.nodes![1]!.podCIDRs.push('fd00:b:0:1::/64');
  return doc;
};
export const dualStackHubSpec = (): NodeDataplaneSpec => readNodeDataplaneSpec(dualStackHubSpecDocument());

const homeKeys = ['podCIDR', 'externalCIDR', 'transitAddress'] as const;
const peerKeys = ['remotePodCIDR', 'remoteExternalCIDR', 'localNATPodCIDR', 'localNATExternalCIDR'] as const;

/** Moves `whole`'s secondary networks into its own fields; its own ones become the secondary, or go with `drop`. */
function promoteSecondary(whole: { secondary?: object }, keys: readonly string[], drop: boolean): void {
  const own = whole as Record<string, unknown> & { secondary?: Record<string, unknown> };
  const secondary = own.secondary;
  if (!secondary) throw new Error('promoteSecondary: no secondary family to promote');
  const primary = Object.fromEntries(keys.map((k) => [k, own[k]]));
  for (const k of keys) own[k] = secondary[k];
  if (drop) delete own.secondary;
  else own.secondary = primary;
}

/** A dual-stack `doc` (every peer dual-stack) with IPv6 as the primary family: the same networks, the families' places swapped. */
export function ipv6Primary<T extends NodeDataplaneSpecDocument>(doc: T): T {
  promoteSecondary(doc, homeKeys, false);
  for (const p of doc.peers) promoteSecondary(p, peerKeys, false);
  return doc;
}

/**
 * A dual-stack `doc` (every peer dual-stack) made IPv6-only: its IPv6 networks in the own fields, no
 * `secondary`, its IPv4 NatMappings and node pod prefixes gone (the underlay stays IPv4).
 */
export function ipv6Only<T extends NodeDataplaneSpecDocument>(doc: T): T {
  promoteSecondary(doc, homeKeys, true);
  for (const p of doc.peers) promoteSecondary(p, peerKeys, true);
  doc.natMappings = doc.natMappings.filter((m) => m.externalAddress.includes(':'));
  for (const n of doc.nodes ?? []) n.podCIDRs = n.podCIDRs.filter((c) => c.includes(':'));
  return doc;
}

/** Peer `index` of a dual-stack `doc` peered in IPv6 only (an IPv6-only peer): its IPv6 networks in its own fields, no `secondary`. */
export function peerIpv6Only<T extends NodeDataplaneSpecDocument>(doc: T, index: number): T {
  promoteSecondary(doc.peers[index]!, peerKeys, true);
  return doc;
}

/** An IPv4 underlay address's twin in 2001:db8::/32 (its four bytes as the last four groups), so equal addresses stay equal. */
export const ipv6UnderlayOf = (ipv4: string): string =>
  `2001:db8::${ipv4
    .split('.')
    .map((b) => Number(b).toString(16))
    .join(':')}`;

/** `doc` over an IPv6 underlay: every tunnel end (the node's, the gateways', the other nodes', the peers') its IPv6 twin. */
export function ipv6Underlay<T extends NodeDataplaneSpecDocument>(doc: T): T {
  doc.node.underlayAddress = ipv6UnderlayOf(doc.node.underlayAddress);
  if (doc.node.publicAddress) doc.node.publicAddress = ipv6UnderlayOf(doc.node.publicAddress);
  if (doc.activeGateway) doc.activeGateway.underlayAddress = ipv6UnderlayOf(doc.activeGateway.underlayAddress);
  for (const { endpoint } of doc.peers) {
    if (!endpoint) continue;
    endpoint.address = ipv6UnderlayOf(endpoint.address);
    if (endpoint.standbyAddresses) endpoint.standbyAddresses = endpoint.standbyAddresses.map(ipv6UnderlayOf);
  }
  for (const n of doc.nodes ?? []) n.underlayAddress = ipv6UnderlayOf(n.underlayAddress);
  return doc;
}

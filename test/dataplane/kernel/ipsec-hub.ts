import { type NodeDataplaneSpecDocument, readNodeDataplaneSpec } from '../../../src/api/node-dataplane';
import type { NodeDataplaneSpec } from '../../../src/nodespec/spec';
import { hubSpecDocument, withIpv6 } from '../../support/node-specs';

/** The hub gateway of test/support/node-specs.ts at public address `publicAddress`, with the peers named encrypted. */
export function ipsecHubDocument(encrypted: readonly string[], publicAddress = '198.51.100.11'): NodeDataplaneSpecDocument {
  const doc = hubSpecDocument();
  doc.node.publicAddress = publicAddress;
  for (const peer of doc.peers) if (encrypted.includes(peer.clusterId)) peer.transport = 'ipsec';
  return doc;
}

/** The same, typed. */
export const ipsecHub = (encrypted: readonly string[], publicAddress?: string): NodeDataplaneSpec =>
  readNodeDataplaneSpec(ipsecHubDocument(encrypted, publicAddress));

/** The families of cluster-a's encrypted peering: IPv4 alone, both (IPv6 under `secondary`), or IPv6 alone (its own fields IPv6). */
export type PeerFamilies = 'ipv4' | 'dual' | 'ipv6';

/** A's IPv6 networks: its own (remote*) and ours in its view (localNAT*, of our IPv6 networks' lengths: /56, /120). */
export interface PeerIpv6Networks {
  pod: string;
  external: string;
  natPod: string;
  natExternal: string;
}

/**
 * The hub with cluster-a's peering encrypted and carrying `families`, by value: dual-stack (withIpv6: we
 * are fd00:10::/56 + fd00:50::/120) whenever the peering has IPv6 or `dualStackHome` says so; A's IPv6
 * networks withIpv6's (fd00:11::/56 + fd00:60::/120, we are fd01:16::/56 + fd01:17::/120 there) unless
 * `ipv6` gives others. An IPv6-only peering keeps its IPv6 networks in its own fields, as the Network
 * Manager writes a peering whose first family is IPv6 (docs/dual-stack.md, "The model").
 */
export function ipsecHubCarryingDocument(
  families: PeerFamilies,
  publicAddress = '198.51.100.11',
  options: { dualStackHome?: boolean; ipv6?: PeerIpv6Networks } = {},
): NodeDataplaneSpecDocument {
  const doc = ipsecHubDocument(['cluster-a'], publicAddress);
  if (families === 'ipv4' && !options.dualStackHome) return doc;
  withIpv6(doc);
  const a = doc.peers[0]!;
  if (options.ipv6) {
    const { pod, external, natPod, natExternal } = options.ipv6;
    a.secondary = { remotePodCIDR: pod, remoteExternalCIDR: external, localNATPodCIDR: natPod, localNATExternalCIDR: natExternal };
  }
  const six = a.secondary!;
  if (families === 'ipv4') delete a.secondary;
  if (families === 'ipv6') {
    delete a.secondary;
    Object.assign(a, six);
  }
  return doc;
}

/** The same, typed. */
export const ipsecHubCarrying = (...args: Parameters<typeof ipsecHubCarryingDocument>): NodeDataplaneSpec =>
  readNodeDataplaneSpec(ipsecHubCarryingDocument(...args));

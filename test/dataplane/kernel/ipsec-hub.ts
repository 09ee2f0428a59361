import { type NodeDataplaneSpecDocument, readNodeDataplaneSpec } from '../../../src/api/node-dataplane';
import type { NodeDataplaneSpec } from '../../../src/nodespec/spec';
import { hubSpecDocument } from '../../support/node-specs';

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

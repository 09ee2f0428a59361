import type { NodeDataplaneSpec } from '../../src/nodespec/spec';
import { hubSpec } from '../datapath/hub-spec';

/** The hub gateway of hub-spec.ts at public address `publicAddress`, with the peers named encrypted. */
export function ipsecHub(encrypted: readonly string[], publicAddress = '198.51.100.11'): NodeDataplaneSpec {
  const spec = hubSpec();
  spec.node.publicAddress = publicAddress;
  for (const peer of spec.peers) if (encrypted.includes(peer.clusterId)) peer.transport = 'ipsec';
  return spec;
}

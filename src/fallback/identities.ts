/**
 * Names, MACs and VNIs of the fallback's devices, derived from cluster and node names so that every node
 * (and both ends of a peering) computes the same ones without telling each other.
 */
import { createHash } from 'node:crypto';

const digest = (text: string) => createHash('sha256').update(text).digest();

/** A locally administered unicast MAC that depends only on `parts`. */
export function derivedMac(...parts: string[]): string {
  const d = digest(parts.join('\0'));
  const bytes = [0x02, d[0]!, d[1]!, d[2]!, d[3]!, d[4]!];
  return bytes.map((b) => b.toString(16).padStart(2, '0')).join(':');
}

/** MAC of a node's overlay device: its FDB entry on every other node points to the node's underlay address. */
export const overlayMac = (clusterId: string, node: string) => derivedMac('overlay', clusterId, node);

/**
 * The VNI of the tunnel between two clusters' gateways: the same at both ends (the pair is ordered),
 * 24 bits, never the intra-cluster overlay's.
 */
export function peeringVni(a: string, b: string, overlayVni: number): number {
  const [x, y] = [a, b].sort();
  const vni = digest(`peering\0${x}\0${y}`).readUIntBE(0, 3) || 1;
  return vni === overlayVni ? (vni % 0xffffff) + 1 : vni;
}

/** MAC of `owner`'s tunnel device toward `peer`: the peer addresses its frames to it. */
export const tunnelMac = (owner: string, peer: string) => derivedMac('tunnel', owner, peer);

/** The tunnel device toward a peer: `stp` and the peer id in hex (11 characters, within IFNAMSIZ). */
export const tunnelDevice = (peerId: number) => `stp${peerId.toString(16).padStart(8, '0')}`;

export const overlayDevice = 'strait.vxlan';
/** The fallback's devices: the overlay and the tunnels to peers. */
export const isFallbackDevice = (name: string) => name === overlayDevice || /^stp[0-9a-f]{8}$/.test(name);
/** The custom routing table of seed 001. */
export const routingTable = 18952;
/** Rules toward remote prefixes, and rules for traffic arriving from peers (symmetric routing). */
export const rulePriorities = { toRemote: 18952, fromPeer: 18953 } as const;

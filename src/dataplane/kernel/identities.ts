/**
 * Names and MACs of the fallback's own devices, derived from cluster and node names so that every node
 * computes the same ones without telling the others. A peering's VNI and tunnel MACs are the wire
 * format both dataplanes share: src/nodespec/peer-tunnel.ts.
 */
import { derivedMac } from '../../nodespec/peer-tunnel';

/** MAC of a node's overlay device: its FDB entry on every other node points to the node's underlay address. */
export const overlayMac = (clusterId: string, node: string) => derivedMac('overlay', clusterId, node);

/**
 * The IPv6 next hop naming the device of `mac`: its modified EUI-64 link-local address (RFC 4291). An
 * IPv6 route cannot take the IPv4 underlay address as gateway, so IPv6 routes name this address and a
 * permanent neighbour entry maps it to the MAC, as the IPv4 routes' underlay address is mapped (over an
 * IPv6 underlay, IPv4 routes name it too). Nothing needs to hold the address: it only selects the MAC.
 */
export function linkLocalAddress(mac: string): string {
  const b = mac.split(':').map((h) => parseInt(h, 16));
  const group = (hi: number, lo: number) => ((hi << 8) | lo).toString(16);
  return `fe80::${group(b[0]! ^ 0x02, b[1]!)}:${group(b[2]!, 0xff)}:${group(0xfe, b[3]!)}:${group(b[4]!, b[5]!)}`;
}

/** The tunnel device toward a peer: `stp` and the peer id in hex (11 characters, within IFNAMSIZ). */
export const tunnelDevice = (peerId: number) => `stp${peerId.toString(16).padStart(8, '0')}`;

export const overlayDevice = 'strait.vxlan';
/** The fallback's devices: the overlay and the tunnels to peers. */
export const isFallbackDevice = (name: string) => name === overlayDevice || /^stp[0-9a-f]{8}$/.test(name);
/** The custom routing table of the kernel fallback (docs/kernel-fallback.md). */
export const routingTable = 18952;
/** Rules toward remote prefixes, and rules for traffic arriving from peers (symmetric routing). */
export const rulePriorities = { toRemote: 18952, fromPeer: 18953 } as const;

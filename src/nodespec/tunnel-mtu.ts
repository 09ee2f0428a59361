/**
 * The MTU of Strait's tunnels (docs/datapath.md and docs/kernel-fallback.md, "MTU"): what an inner
 * packet may measure so that, encapsulated, it still fits the underlay without being fragmented. Pure:
 * the agent reads the underlay device's MTU and the cluster's override, this says what follows.
 */

import type { IpFamily } from '../net/cidr';

/** Bytes a VXLAN tunnel over IPv4 adds: outer IP 20, UDP 8, VXLAN 8, the inner Ethernet header 14. */
const vxlanOverhead = 50;

/** What an IPv6 outer header adds to either tunnel's overhead: 40 bytes where IPv4's are 20 (RFC 8200). */
const outerIpv6Extra = 20;

/**
 * Bytes an encrypted peering (xfrm interface, tunnel-mode ESP with AES-GCM over IPv4) adds at most: outer
 * IP 20, ESP header 8, IV 8, trailer and padding 2-5, ICV 16, rounded up with room for UDP encapsulation
 * later. 1500 less this is the 1420 such tunnels always had.
 */
const ipsecOverhead = 80;

/** IPv6's minimum link MTU (RFC 8200): Linux turns IPv6 off on a device with a smaller one. */
export const ipv6MinimumMtu = 1280;

/** The bounds of the cluster-level override (`tunnelMTU`): IPv6's minimum link MTU, and IPv4's largest packet. */
export const tunnelMtuRange = { minimum: ipv6MinimumMtu, maximum: 65535 } as const;

export type Encapsulation = 'vxlan' | 'ipsec';

/**
 * The tunnel MTU for `encapsulation`: the underlay device's MTU less the encapsulation's overhead over the
 * underlay's family, or the cluster's override. The override names the VXLAN tunnels' MTU (what the path
 * between nodes allows less VXLAN), so an encrypted peering gets the same path less its own, larger, overhead.
 */
export function tunnelMtu(encapsulation: Encapsulation, underlayMtu: number, override?: number, underlayFamily: IpFamily = 4): number {
  const extra = underlayFamily === 6 ? outerIpv6Extra : 0;
  const vxlan = vxlanOverhead + extra;
  const path = override !== undefined ? override + vxlan : underlayMtu;
  return path - (encapsulation === 'vxlan' ? vxlan : ipsecOverhead + extra);
}

/**
 * The largest TCP segment a tunnel of `mtu` carries whole: less the family's IP header and a TCP header
 * without options (40 for IPv4, 60 for IPv6).
 */
export const clampedMss = (mtu: number, family: 4 | 6 = 4) => mtu - (family === 6 ? 60 : 40);

/** Assumed when no device of the node holds its tunnels' source address (one behind NAT): Ethernet's. */
export const defaultUnderlayMtu = 1500;

/** Both tunnel MTUs of a node. */
export interface TunnelMtus {
  vxlan: number;
  ipsec: number;
}

/** The device a node's tunnel MTUs derive from: the one holding its tunnels' source address (the smallest MTU of several). */
export interface UnderlayDevice {
  name: string;
  mtu: number;
}

/**
 * A node's tunnel MTUs, with the underlay device they derive from when they do (no `tunnelMTU` override,
 * and a device holds the node's address), so a refusal can name what to change.
 */
export interface NodeTunnelMtus extends TunnelMtus {
  underlay?: UnderlayDevice;
}

export const tunnelMtus = (underlayMtu: number, override?: number, underlayFamily: IpFamily = 4): TunnelMtus => ({
  vxlan: tunnelMtu('vxlan', underlayMtu, override, underlayFamily),
  ipsec: tunnelMtu('ipsec', underlayMtu, override, underlayFamily),
});

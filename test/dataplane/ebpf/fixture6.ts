/**
 * The IPv6 family of fixture.ts's home cluster L and its peers P (remapped both ways) and Q (not
 * remapped): L dual-stack, its IPv6 maps programmed next to the IPv4 ones. Prefix lengths differ between
 * L's networks and the remote ones, and some end inside a 16-bit group, so a rule using the wrong prefix,
 * or a translation that keeps the wrong bits, gives a different packet.
 */
import ipaddr from 'ipaddr.js';
import { CONFIG_KEY, PREFIX_LEN_NONE } from '../../../src/dataplane/ebpf/layout';
import {
  Datapath,
  type PeerSetup,
  type Role,
  type UnderlayFamily,
  configFor,
  home,
  nodeEntry,
  peerEntry,
  peerP,
  peerQ,
  underlay6,
} from './fixture';

type Prefix = { addr: string; prefixLen: number };

export const home6 = {
  pod: { addr: 'fd00:a::', prefixLen: 48 },
  external: { addr: 'fd00:e:0:500::', prefixLen: 56 },
  transit: 'fd00:e:0:5ff::fa',
};

/** The IPv6 prefixes of a peering; its tunnel (endpoint, VNI, MACs) is the IPv4 fixture's. */
export interface PeerSetup6 {
  tunnel: PeerSetup;
  remotePod: Prefix;
  remoteExternal: Prefix;
  localNatPod: Prefix;
  localNatExternal: Prefix;
}

export const peerP6: PeerSetup6 = {
  tunnel: peerP,
  remotePod: { addr: 'fd17:16:0:1::', prefixLen: 64 },
  remoteExternal: { addr: 'fd19:2:1:3000::', prefixLen: 52 },
  localNatPod: { addr: 'fd60:6::', prefixLen: 48 },
  localNatExternal: { addr: 'fd70:9:0:900::', prefixLen: 56 },
};

const peerQ6: PeerSetup6 = {
  tunnel: peerQ,
  remotePod: { addr: 'fd10:32:0:10::', prefixLen: 60 },
  remoteExternal: { addr: 'fd10:33::20', prefixLen: 123 },
  localNatPod: home6.pod,
  localNatExternal: home6.external,
};

/** This node (the gateway) hosts fd00:a:0:8000::/64, another node fd00:a:0:ffff::/64: host bits right after the /48 set. */
const thisNode6 = { addr: 'fd00:a:0:8000::', prefixLen: 64 };
export const otherNode6 = { prefix: { addr: 'fd00:a:0:ffff::', prefixLen: 64 }, underlay: '192.168.1.13' };

/** A local pod on another node, and a pod of P (reflected to Q: hub transit, test/dataplane/ebpf/transit.test.ts). */
export const natMappings6 = [
  { external: 'fd00:e:0:5f7::7', real: 'fd00:a:0:ffff::4' },
  { external: 'fd00:e:0:5f8::8', real: 'fd17:16:0:1::9' },
];

/** An IPv4 network a home or a peering lacks (STRAIT_PREFIX_LEN_NONE): what the agent writes for it. */
const noNetwork = { addr: '0.0.0.0', prefixLen: PREFIX_LEN_NONE };

/** `p`'s IPv4 entry as a peering without IPv4 has it: the tunnel, no views of our networks. */
export const ipv6OnlyPeerEntry = (p: PeerSetup) => ({ ...peerEntry(p), localNatPod: noNetwork, localNatExternal: noNetwork });

/**
 * The shapes of L the IPv6 tests run on, each loaded as `role`: dual-stack (IPv4 programmed by
 * Datapath.program, then IPv6), and IPv6-only, as the agent writes it (src/dataplane/ebpf/desired-maps.ts):
 * an IPv4 config and P's and Q's entries (their tunnels) with no IPv4 networks, no IPv4 route,
 * NatMapping or node prefix.
 */
export const homeShapes: [string, (role: Role) => Promise<Datapath>][] = [
  ['dual-stack', async (role) => programIpv6((await Datapath.load()).program(role))],
  [
    'IPv6-only',
    async (role) => {
      const dp = await Datapath.load();
      dp.maps.config.update(CONFIG_KEY, configFor(role, { podCidr: noNetwork, externalCidr: noNetwork, transitAddr: '0.0.0.0' }));
      for (const p of [peerP, peerQ]) dp.maps.peers.update(p.id, ipv6OnlyPeerEntry(p));
      return programIpv6(dp);
    },
  ],
];

/** Programs L's IPv6 family into `dp` (programmed already for IPv4 by Datapath.program). */
export function programIpv6(dp: Datapath, underlay: UnderlayFamily = 4): Datapath {
  dp.maps.config6.update(0, { podCidr: home6.pod, externalCidr: home6.external, transitAddr: home6.transit });
  for (const p of [peerP6, peerQ6]) {
    dp.maps.peers6.update(p.tunnel.id, { localNatPod: p.localNatPod, localNatExternal: p.localNatExternal });
    dp.maps.routes6.update(p.remotePod, { peerId: p.tunnel.id, kind: 0 });
    dp.maps.routes6.update(p.remoteExternal, { peerId: p.tunnel.id, kind: 1 });
  }
  for (const m of natMappings6) {
    dp.maps.natmap6.update(m.external, m.real);
    dp.maps.natmap6Rev.update(m.real, m.external);
  }
  dp.maps.nodes6.update(thisNode6, nodeEntry(underlay, home.gateway, underlay6.gateway));
  dp.maps.nodes6.update(otherNode6.prefix, nodeEntry(underlay, otherNode6.underlay, underlay6.otherNode));
  return dp;
}

const toBig = (a: string) =>
  ipaddr.IPv6.parse(a)
    .toByteArray()
    .reduce((acc, b) => (acc << 8n) | BigInt(b), 0n);
const fromBig = (v: bigint) =>
  ipaddr.fromByteArray(Array.from({ length: 16 }, (_, i) => Number((v >> BigInt(8 * (15 - i))) & 0xffn))).toString();

/** The independent reading of a translation: the host bits of `a` in network `to` (128-bit arithmetic). */
export function translate6(a: string, to: Prefix): string {
  const all = (1n << 128n) - 1n;
  const mask = to.prefixLen === 0 ? 0n : (all << BigInt(128 - to.prefixLen)) & all;
  return fromBig((toBig(to.addr) & mask) | (toBig(a) & ~mask & all));
}

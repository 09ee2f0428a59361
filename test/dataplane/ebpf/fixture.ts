/**
 * The datapath under BPF_PROG_TEST_RUN: dist/bpf/strait.o loaded with a temporary pin root and its
 * maps programmed for one home cluster L and two peers. All four prefixes of each peer are distinct
 * from each other and from L's own networks (P: remapped both ways), or equal to L's own (Q: no remap),
 * with different prefix lengths, so a rule using the wrong prefix gives a different packet.
 */
import assert from 'node:assert/strict';
import { BpfObject, type BpfProgram, type CodecValue, ipv6, struct, u32 } from '../../../src/native';
import * as layout from '../../../src/dataplane/ebpf/layout';
import { syncTailCalls } from '../../../src/dataplane/ebpf/tail-calls';
import { checksumProblems, type Macs } from '../../support/packet';
import { tempPinDir, testObject } from '../../support/kernel';

const probeTunnel = struct({ remoteIpv4: u32, tunnelId: u32, ttl: u32, found: u32, pktType: u32, remoteIpv6: ipv6 });

/** skb->pkt_type (linux/if_packet.h). */
export const PACKET_HOST = 0;
export const PACKET_OTHERHOST = 3;

export const TC_ACT_OK = 0;
export const TC_ACT_SHOT = 2;
export const TC_ACT_REDIRECT = 7;

export const home = {
  pod: { addr: '10.0.0.0', prefixLen: 16 },
  external: { addr: '10.201.5.0', prefixLen: 24 },
  gateway: '192.168.1.1',
  transit: '10.201.5.250',
  overlayMac: '02:5a:00:00:00:01',
  overlayVni: 100,
  /** A 1500-byte underlay less VXLAN's 50. */
  tunnelMtu: 1450,
};
/**
 * Inner frames to another node of the cluster go to the overlay MAC, from it with the last bit flipped (a
 * VXLAN device drops its own source).
 */
export const overlayMacs: Macs = { dst: home.overlayMac, src: '02:5a:00:00:00:00' };

export interface PeerSetup {
  id: number;
  remotePod: { addr: string; prefixLen: number };
  remoteExternal: { addr: string; prefixLen: number };
  localNatPod: { addr: string; prefixLen: number };
  localNatExternal: { addr: string; prefixLen: number };
  endpoint: string;
  /** Its endpoint on an IPv6 underlay. */
  endpoint6: string;
  vni: number;
  /** The peering's inner MACs: the peer's tunnel MAC toward us, and ours toward it. */
  dstMac: string;
  srcMac: string;
}

/** Inner frames toward a peer carry the MACs of its peer entry, unrelated to the overlay MAC. */
export const macsToward = (p: PeerSetup): Macs => ({ dst: p.dstMac, src: p.srcMac });

/** Remapped both ways. */
export const peerP: PeerSetup = {
  id: 1,
  remotePod: { addr: '172.16.0.0', prefixLen: 16 },
  remoteExternal: { addr: '192.168.32.0', prefixLen: 20 },
  localNatPod: { addr: '10.60.0.0', prefixLen: 16 },
  localNatExternal: { addr: '10.70.9.0', prefixLen: 24 },
  endpoint: '203.0.113.1',
  endpoint6: 'fd00:ff::1',
  vni: 1001,
  dstMac: '02:b1:00:00:00:0d',
  srcMac: '02:a1:00:00:00:05',
};
/** No remapping: it sees L's own networks. */
export const peerQ: PeerSetup = {
  id: 2,
  remotePod: { addr: '10.32.0.0', prefixLen: 20 },
  remoteExternal: { addr: '10.33.0.32', prefixLen: 27 },
  localNatPod: home.pod,
  localNatExternal: home.external,
  endpoint: '203.0.113.2',
  endpoint6: 'fd00:ff::2',
  vni: 1002,
  dstMac: '02:b2:00:00:00:0d',
  srcMac: '02:a2:00:00:00:05',
};

/** Node hosting 10.0.3.0/24 (not the gateway): symmetric routing sends there. */
export const otherNode = { prefix: { addr: '10.0.3.0', prefixLen: 24 }, underlay: '192.168.1.13' };

/** The underlay's family: every tunnel end (this node, the gateway, the other node, the peers' endpoints) in it. */
export type UnderlayFamily = 4 | 6;
/** The same tunnel ends on an IPv6 underlay. */
export const underlay6 = { gateway: 'fd00:1::1', worker: 'fd00:1::12', otherNode: 'fd00:1::13' };
/** `v4` on an IPv4 underlay, `v6` on an IPv6 one, as the maps hold a tunnel end (desired-maps.ts tunnelEnd). */
const tunnelEnd = (family: UnderlayFamily, v4: string, v6: string) => (family === 4 ? { v4, v6: '::' } : { v4: '0.0.0.0', v6 });
/** A strait_nodes entry for a node at `underlay` (its IPv6 twin on an IPv6 underlay). */
export const nodeEntry = (family: UnderlayFamily, underlay: string, underlay6Address: string) => {
  const { v4, v6 } = tunnelEnd(family, underlay, underlay6Address);
  return { underlay: v4, underlay6: v6 };
};

/** A standby: a gateway candidate this node does not send through (it still translates what arrives). */
export type Role = 'gateway' | 'worker' | 'standby';

export function configFor(
  role: Role,
  over: Partial<CodecValue<typeof layout.config>> = {},
  underlay: UnderlayFamily = 4,
): CodecValue<typeof layout.config> {
  const node =
    role === 'gateway' ? tunnelEnd(underlay, home.gateway, underlay6.gateway) : tunnelEnd(underlay, '192.168.1.12', underlay6.worker);
  const gateway = tunnelEnd(underlay, home.gateway, underlay6.gateway);
  return {
    podCidr: home.pod,
    externalCidr: home.external,
    nodeAddr: node.v4,
    gatewayAddr: gateway.v4,
    nodeAddr6: node.v6,
    gatewayAddr6: gateway.v6,
    transitAddr: home.transit,
    overlayIfindex: 42,
    overlayVni: home.overlayVni,
    flags: { gateway: layout.Flags.Gateway, standby: layout.Flags.Standby, worker: 0 }[role],
    overlayMac: home.overlayMac,
    tunnelMtu: home.tunnelMtu,
    ...over,
  };
}

/** `p`'s strait_peers entry: its views of our IPv4 networks and its tunnel (over `underlay`). */
export const peerEntry = (p: PeerSetup, underlay: UnderlayFamily = 4): CodecValue<typeof layout.peer> => ({
  localNatPod: p.localNatPod,
  localNatExternal: p.localNatExternal,
  endpoint: tunnelEnd(underlay, p.endpoint, p.endpoint6).v4,
  endpoint6: tunnelEnd(underlay, p.endpoint, p.endpoint6).v6,
  vni: p.vni,
  dstMac: p.dstMac,
  srcMac: p.srcMac,
});

export type PeerCounts = CodecValue<typeof layout.peerCounters>;
export const noCounts: PeerCounts = { txPackets: 0n, txBytes: 0n, rxPackets: 0n, rxBytes: 0n };

export class Datapath {
  private constructor(
    readonly obj: BpfObject,
    readonly maps: layout.DatapathMaps,
    private readonly pins: { dir: string; cleanup: () => void },
  ) {}

  private probe: BpfObject | undefined;

  /** `configure` runs before the load, e.g. to make a map smaller (BpfObject.setMaxEntries). */
  static async load(configure?: (obj: BpfObject) => void): Promise<Datapath> {
    const pins = tempPinDir();
    try {
      const obj = await BpfObject.load(layout.datapathObjectPath, { pinRoot: pins.dir }, configure);
      // As the agent's first apply does (tail-calls.ts).
      syncTailCalls(obj);
      return new Datapath(obj, layout.openMaps(obj), pins);
    } catch (err) {
      pins.cleanup();
      throw err;
    }
  }

  /** L as `role` with peers P and Q, NatMappings and the node table, every tunnel over `underlay`. */
  program(role: Role, underlay: UnderlayFamily = 4): this {
    this.maps.config.update(layout.CONFIG_KEY, configFor(role, {}, underlay));
    for (const p of [peerP, peerQ]) this.addPeer(p, underlay);
    this.mapExternal('10.201.5.7', '10.0.3.4'); // a local pod on another node
    this.mapExternal('10.201.5.8', '172.16.9.9'); // a pod of P, reflected to Q (hub)
    this.maps.nodes.update({ prefixLen: 24, addr: '10.0.0.0' }, nodeEntry(underlay, home.gateway, underlay6.gateway));
    this.maps.nodes.update(otherNode.prefix, nodeEntry(underlay, otherNode.underlay, underlay6.otherNode));
    return this;
  }

  addPeer(p: PeerSetup, underlay: UnderlayFamily = 4): void {
    this.maps.peers.update(p.id, peerEntry(p, underlay));
    this.maps.routes.update(p.remotePod, { peerId: p.id, kind: layout.PrefixKind.Pod });
    this.maps.routes.update(p.remoteExternal, { peerId: p.id, kind: layout.PrefixKind.External });
  }

  mapExternal(external: string, real: string): void {
    this.maps.natmap.update(external, real);
    this.maps.natmapRev.update(real, external);
  }

  prog(name: 'fromPod' | 'fromOverlay'): BpfProgram {
    return this.obj.program(name === 'fromPod' ? layout.Program.FromPod : layout.Program.FromOverlay);
  }

  run(name: 'fromPod' | 'fromOverlay', frame: Buffer): { retval: number; data: Buffer } {
    return this.prog(name).testRun(frame);
  }

  /** Drops per reason, summed over CPUs. */
  drops(): number[] {
    return Array.from({ length: layout.DROP_REASON_COUNT }, (_, r) =>
      Number((this.maps.drops.lookup(r) ?? []).reduce((a, b) => a + b, 0n)),
    );
  }

  /** Peer `id`'s counters in each family's map, summed over CPUs. */
  peerCounters(id: number): Record<'ipv4' | 'ipv6', PeerCounts> {
    const sum = (map: layout.DatapathMaps['peerCounters']) =>
      (map.lookup(id) ?? []).reduce(
        (a, c) => ({
          txPackets: a.txPackets + c.txPackets,
          txBytes: a.txBytes + c.txBytes,
          rxPackets: a.rxPackets + c.rxPackets,
          rxBytes: a.rxBytes + c.rxBytes,
        }),
        noCounts,
      );
    return { ipv4: sum(this.maps.peerCounters), ipv6: sum(this.maps.peerCounters6) };
  }

  /**
   * Runs `input` and asserts the verdict and the exact output bytes; when the packet was to be
   * changed, also that every checksum of the output verifies.
   */
  expect(name: 'fromPod' | 'fromOverlay', input: Buffer, verdict: number, expected: Buffer): void {
    const r = this.run(name, input);
    assert.equal(r.retval, verdict, `verdict of ${name}`);
    assert.equal(r.data.toString('hex'), expected.toString('hex'), `output of ${name}`);
    if (!expected.equals(input)) assert.deepEqual(checksumProblems(r.data), []);
  }

  /** Asserts a drop for `reason` (and that exactly one more was counted for it). */
  expectDrop(name: 'fromPod' | 'fromOverlay', input: Buffer, reason: layout.DropReason): void {
    const before = this.drops();
    assert.equal(this.run(name, input).retval, TC_ACT_SHOT, `${name} drops`);
    const after = this.drops();
    assert.deepEqual(
      after.map((n, i) => n - before[i]!),
      before.map((_, i) => (i === reason ? 1 : 0)),
      `drop counted as ${layout.DropReason[reason]}`,
    );
  }

  /**
   * Runs `frame` through test/bpf/tunnel_probe.c (the same logic, sharing these maps through the pin
   * root) and returns the verdict and the tunnel key the packet left with.
   */
  async tunnelOf(
    name: 'fromPod' | 'fromOverlay',
    frame: Buffer,
  ): Promise<{ retval: number; tunnel?: { remote: string; vni: number; ttl: number } }> {
    const { retval, seen } = await this.probeRun(name, frame);
    if (!seen.found) return { retval };
    const r = seen.remoteIpv4;
    // found 2: the key of a tunnel over IPv6.
    const remote = seen.found === 2 ? seen.remoteIpv6 : [24, 16, 8, 0].map((s) => (r >>> s) & 255).join('.');
    return { retval, tunnel: { remote, vni: seen.tunnelId, ttl: seen.ttl } };
  }

  /** Like tunnelOf: the verdict and skb->pkt_type after the program (the kernel set it from the frame's destination MAC). */
  async pktTypeOf(name: 'fromPod' | 'fromOverlay', frame: Buffer): Promise<{ retval: number; pktType: number }> {
    const { retval, seen } = await this.probeRun(name, frame);
    return { retval, pktType: seen.pktType };
  }

  /** `frame` through strait_overlay_ingress as if it came in on VXLAN `vni` over `underlay`: the verdict and the packet out. */
  async fromOverlayOnVni(frame: Buffer, vni: number, underlay: UnderlayFamily = 4): Promise<{ retval: number; data: Buffer }> {
    this.probe = await this.probeObject();
    this.probe.map('probe_vni', u32, u32).update(0, vni);
    this.probe.map('probe_vni', u32, u32).update(1, underlay === 6 ? 1 : 0);
    const { retval, data } = this.probe.program('probe_from_overlay_vni').testRun(frame);
    return { retval, data };
  }

  /** The recording object, sharing the datapath's maps; its strait_transit6 (recording too) takes the slot. */
  private async probeObject(): Promise<BpfObject> {
    if (!this.probe) {
      this.probe = await BpfObject.load(testObject('tunnel_probe'), { pinRoot: this.pins.dir });
      syncTailCalls(this.probe);
    }
    return this.probe;
  }

  private async probeRun(name: 'fromPod' | 'fromOverlay', frame: Buffer) {
    this.probe = await this.probeObject();
    const retval = this.probe.program(name === 'fromPod' ? 'probe_from_pod' : 'probe_from_overlay').testRun(frame).retval;
    return { retval, seen: this.probe.map('probe_tunnel', u32, probeTunnel).lookup(0)! };
  }

  close(): void {
    this.probe?.close();
    this.obj.close();
    this.pins.cleanup();
  }
}

/** The independent reading of a translation: the host bits of `a` in network `to`. */
export function translate(a: string, to: { addr: string; prefixLen: number }): string {
  const n = (s: string) => s.split('.').reduce((acc, x) => acc * 256 + Number(x), 0);
  const mask = to.prefixLen === 0 ? 0 : Number((0xffffffffn << BigInt(32 - to.prefixLen)) & 0xffffffffn);
  const v = ((n(to.addr) & mask) | (n(a) & ~mask)) >>> 0;
  return [24, 16, 8, 0].map((s) => (v >>> s) & 255).join('.');
}

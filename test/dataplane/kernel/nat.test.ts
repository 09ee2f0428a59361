import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../../../src/errors';
import { applyNat, liveState, removeNat } from '../../../src/dataplane/kernel/nat-apply';
import { natRuleset } from '../../../src/dataplane/kernel/nat-ruleset';
import type { NftDocument } from '../../../src/kernel/nft-json';
import { ip, nft, run } from '../../../src/kernel/command';
import { createNetns, deleteNetns } from '../../../src/kernel/netns';
import { type NodeDataplaneSpecDocument, readNodeDataplaneSpec } from '../../../src/api/node-dataplane';
import type { NodeDataplaneSpec } from '../../../src/nodespec/spec';
import { hubSpecDocument, ipv6Only, withIpv6 } from '../../support/node-specs';
import { netnsPerTest, requireRoot, uniqueName } from '../../support/kernel';
import { IcmpType, type Ipv4Fields, type L4, Proto, checksumProblems, datagram, parseIpv4 } from '../../support/packet';
import { waitFor } from '../../support/wait';
import { Capture, sendDatagram } from '../../support/wire';

const devices = { peerInterface: (peerId: number) => `stp${peerId.toString(16).padStart(8, '0')}`, overlay: 'strait.vxlan' };

/*
 * We are hub B: PodCIDR 10.0.0.0/16, ExternalCIDR 10.50.0.0/24, transit 10.50.0.254. Peer A (id 0x2a)
 * remaps everything: A is 10.1.0.0/16 + 10.60.0.0/24 here, we are 172.16.0.0/16 + 172.17.0.0/24 there.
 * Peer C (id 9): 10.2.0.0/20 + 10.70.0.0/24 here, we are 192.168.0.0/16 + 10.90.0.0/24 there. Six
 * distinct prefixes of two lengths: a rule using the wrong one sends a packet nowhere or to another host.
 */
const specDocument = (): NodeDataplaneSpecDocument => {
  const s = hubSpecDocument();
  s.peers[0]!.peerId = 0x2a;
  s.natMappings = [
    { externalAddress: '10.50.0.1', endpointAddress: '10.0.0.6' },
    { externalAddress: '10.50.0.2', endpointAddress: '10.2.0.5' },
  ];
  return s;
};
const spec = (): NodeDataplaneSpec => readNodeDataplaneSpec(specDocument());

/* The same hub, dual-stack (withIpv6 names its IPv6 networks). */
const dualStackSpec = (): NodeDataplaneSpec => readNodeDataplaneSpec(withIpv6(specDocument()));
/* The same hub, IPv6-only: the dual-stack one's IPv6 networks in its own fields. */
const ipv6OnlySpec = (): NodeDataplaneSpec => readNodeDataplaneSpec(ipv6Only(withIpv6(specDocument())));

const PORT = 7000;

/**
 * UDP echo on each address given: replies with a line naming the local address it was sent to and the
 * sender's address, followed by the datagram it received.
 */
const echoServer = `
const dgram = require('node:dgram');
const addrs = process.argv.slice(1);
let bound = 0;
for (const local of addrs) {
  const s = dgram.createSocket(local.includes(':') ? 'udp6' : 'udp4');
  s.on('message', (m, r) => s.send(Buffer.concat([Buffer.from(JSON.stringify({ local, from: r.address }) + '\\n'), m]), r.port, r.address));
  s.bind(${PORT}, local, () => { if (++bound === addrs.length) console.log('ready'); });
}`;

/**
 * Sends one datagram ('hello', or `size` bytes) from `source` to `target`, checks that the echo carries
 * it back unchanged, and prints the echo's line and the address the reply came from.
 */
const echoClient = `
const dgram = require('node:dgram');
const [source, target, size] = process.argv.slice(2);
const payload = size ? Buffer.alloc(Number(size), 'fragment me ') : Buffer.from('hello');
const s = dgram.createSocket(source.includes(':') ? 'udp6' : 'udp4');
setTimeout(() => { console.error('no reply from ' + target); process.exit(1); }, 3000);
s.on('message', (m, r) => {
  const end = m.indexOf(10);
  if (!m.subarray(end + 1).equals(payload)) { console.error('the echo is not the datagram sent: ' + (m.length - end - 1) + ' bytes'); process.exit(1); }
  console.log(JSON.stringify({ ...JSON.parse(String(m.subarray(0, end))), replyFrom: r.address }));
  process.exit(0);
});
s.bind(0, source, () => s.send(payload, ${PORT}, target));`;

interface Echo {
  /** Where the datagram arrived and who it arrived from. */
  local: string;
  from: string;
  /** The source of the reply as the sender saw it. */
  replyFrom: string;
}

function sendUdp(netns: string, source: string, target: string, size?: number): Echo {
  // The script on stdin keeps a failure's message (which quotes the command) short.
  return JSON.parse(run(['ip', 'netns', 'exec', netns, 'node', '-', source, target, ...(size ? [String(size)] : [])], echoClient)) as Echo;
}

/**
 * An ICMP error as it arrived: its addresses, type and code, the addresses of the datagram it quotes and
 * that datagram (hex), and the checksums that do not check out.
 */
function icmpErrors(
  frames: Buffer[],
): { from: string; to: string; type: number; code: number; quoting: string; quote: string; checksums: string[] }[] {
  return frames.flatMap((frame) => {
    const ip = parseIpv4(frame);
    if (!ip || ip.proto !== Proto.ICMP) return [];
    const icmp = 14 + ip.headerLength;
    const type = frame.readUInt8(icmp);
    if (type !== IcmpType.DestUnreachable && type !== IcmpType.TimeExceeded) return [];
    const quoted = parseIpv4(frame, icmp + 8);
    const quote = frame.subarray(icmp + 8, 14 + ip.totalLength).toString('hex');
    return [
      {
        from: ip.src,
        to: ip.dst,
        type,
        code: frame.readUInt8(icmp + 1),
        quoting: `${quoted?.src} -> ${quoted?.dst}`,
        quote,
        checksums: checksumProblems(frame),
      },
    ];
  });
}

/** The UDP fragments among `frames`, in arrival order. */
const udpFragments = (frames: Buffer[]) =>
  frames.flatMap((frame) => {
    const ip = parseIpv4(frame);
    if (!ip || ip.proto !== Proto.UDP || (!ip.moreFragments && ip.fragOffset === 0)) return [];
    return [
      {
        src: ip.src,
        dst: ip.dst,
        offset: ip.fragOffset,
        more: ip.moreFragments,
        length: ip.totalLength,
        checksums: checksumProblems(frame),
      },
    ];
  });

/** The three fragments of a datagram of `ipPayload` bytes (UDP header included) over an MTU of 1500. */
const threeFragments = (src: string, dst: string, ipPayload: number) => [
  { src, dst, offset: 0, more: true, length: 1500, checksums: [] },
  { src, dst, offset: 1480, more: true, length: 1500, checksums: [] },
  { src, dst, offset: 2960, more: false, length: 20 + ipPayload - 2960, checksums: [] },
];

async function startEchoServer(netns: string, addresses: string[]): Promise<ChildProcess> {
  const child = spawn('ip', ['netns', 'exec', netns, 'node', '-e', echoServer, ...addresses], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`echo server in ${netns} exited (${code})`)));
    child.stdout!.once('data', () => resolve());
  });
  return child;
}

/**
 * gateway ── stp0000002a ── peerA   (A's pod 10.1.0.7 on lo; routes to 172.16/16, 172.17.0/24)
 *         ── stp00000009 ── peerC   (C's pod 10.2.0.5 on lo; routes to 192.168/16, 10.90.0/24)
 *         ── pod0 ───────── pod     (10.0.0.5, 10.0.0.6 on the veth; 10.50.0.9 on lo)
 */
class Topology {
  readonly gateway = uniqueName('strait-nat-gw');
  readonly peerA = uniqueName('strait-nat-a');
  readonly peerC = uniqueName('strait-nat-c');
  readonly pod = uniqueName('strait-nat-pod');
  private readonly servers: ChildProcess[] = [];

  build(): void {
    for (const ns of [this.gateway, this.peerA, this.peerC, this.pod]) {
      createNetns(ns);
      // Links usable at once: IPv6 forwarding waits for duplicate address detection of the link-local addresses.
      run(['ip', 'netns', 'exec', ns, 'sysctl', '-qw', 'net.ipv6.conf.default.accept_dad=0', 'net.ipv6.conf.all.accept_dad=0']);
      ip(['link', 'set', 'lo', 'up'], ns);
    }
    run(['ip', 'netns', 'exec', this.gateway, 'sysctl', '-qw', 'net.ipv4.ip_forward=1', 'net.ipv6.conf.all.forwarding=1']);
    this.link('stp0000002a', ['100.64.1.1/30', 'fd64:1::1/64'], this.peerA, ['100.64.1.2/30', 'fd64:1::2/64']);
    this.link('stp00000009', ['100.64.2.1/30', 'fd64:2::1/64'], this.peerC, ['100.64.2.2/30', 'fd64:2::2/64']);
    this.link('pod0', ['10.0.0.1/24', 'fd00:10::1/64'], this.pod, ['10.0.0.5/24', '10.0.0.6/24', 'fd00:10::5/64', 'fd00:10::6/64']);
    this.addresses(this.pod, 'lo', ['10.50.0.9/32', 'fd00:50::9/128']);
    ip(['route', 'add', 'default', 'via', '10.0.0.1'], this.pod);
    ip(['-6', 'route', 'add', 'default', 'via', 'fd00:10::1'], this.pod);
    this.addresses(this.peerA, 'lo', ['10.1.0.7/32', 'fd00:11::7/128']);
    this.addresses(this.peerC, 'lo', ['10.2.0.5/32', 'fd00:12::5/128']);
    const routes: [string, string[], string][] = [
      [this.peerA, ['172.16.0.0/16', '172.17.0.0/24'], '100.64.1.1'],
      [this.peerA, ['fd01:16::/56', 'fd01:17::/120'], 'fd64:1::1'],
      [this.peerC, ['192.168.0.0/16', '10.90.0.0/24'], '100.64.2.1'],
      [this.peerC, ['fd02:168::/56', 'fd00:90::/120'], 'fd64:2::1'],
      [this.gateway, ['10.1.0.0/16', '10.60.0.0/24'], '100.64.1.2'],
      [this.gateway, ['fd00:11::/56', 'fd00:60::/120'], 'fd64:1::2'],
      [this.gateway, ['10.2.0.0/20', '10.70.0.0/24'], '100.64.2.2'],
      [this.gateway, ['fd00:12::/60', 'fd00:70::/120'], 'fd64:2::2'],
      [this.gateway, ['10.50.0.9/32'], '10.0.0.5'],
      [this.gateway, ['fd00:50::9/128'], 'fd00:10::5'],
    ];
    for (const [netns, destinations, via] of routes) for (const dst of destinations) ip(['route', 'add', dst, 'via', via], netns);
  }

  /** A veth pair: `gatewaySide` in the gateway, `peer` in `netns`. */
  private link(gatewaySide: string, gatewayAddresses: string[], netns: string, addresses: string[]): void {
    ip(['link', 'add', gatewaySide, 'type', 'veth', 'peer', 'name', 'peer', 'netns', netns], this.gateway);
    this.addresses(this.gateway, gatewaySide, gatewayAddresses);
    this.addresses(netns, 'peer', addresses);
    ip(['link', 'set', gatewaySide, 'up'], this.gateway);
    ip(['link', 'set', 'peer', 'up'], netns);
  }

  private addresses(netns: string, device: string, addresses: string[]): void {
    for (const address of addresses) ip(['addr', 'add', address, 'dev', device], netns);
  }

  async serve(netns: string, addresses: string[]): Promise<void> {
    this.servers.push(await startEchoServer(netns, addresses));
  }

  cleanup(): void {
    for (const server of this.servers) server.kill();
    for (const ns of [this.gateway, this.peerA, this.peerC, this.pod]) deleteNetns(ns);
  }
}

describe('fallback: nftables NAT (real kernel)', function () {
  requireRoot(this);

  describe('packets through a gateway', () => {
    let topology: Topology;
    beforeEach(async () => {
      topology = new Topology();
      try {
        topology.build();
        // Dual-stack: the IPv4 cases run beside the IPv6 table, which must not change them.
        assert.deepEqual(applyNat(natRuleset(dualStackSpec(), devices), topology.gateway), { changed: true });
        await topology.serve(topology.pod, ['10.0.0.5', '10.0.0.6', '10.50.0.9', 'fd00:10::5', 'fd00:10::6', 'fd00:50::9']);
        await topology.serve(topology.peerA, ['10.1.0.7', 'fd00:11::7']);
        await topology.serve(topology.peerC, ['10.2.0.5', 'fd00:12::5']);
      } catch (err) {
        topology.cleanup();
        throw err;
      }
    });
    afterEach(() => topology.cleanup());

    /**
     * Each case in both families (the IPv6 one through the `ip6 strait` table): [source, target, the address
     * the datagram arrives at, the source it arrives from]. The reply always comes from the address dialled.
     */
    type Leg = [source: string, target: string, local: string, from: string];
    const cases: { what: string; from: 'peerA' | 'peerC' | 'pod'; 4: Leg; 6: Leg }[] = [
      {
        what: "from A to our pod in A's view: the same host in our PodCIDR",
        from: 'peerA',
        4: ['10.1.0.7', '172.16.0.5', '10.0.0.5', '10.1.0.7'],
        6: ['fd00:11::7', 'fd01:16::5', 'fd00:10::5', 'fd00:11::7'],
      },
      {
        what: "from A to our ExternalCIDR in A's view: the same host in our ExternalCIDR when no NatMapping holds it",
        from: 'peerA',
        4: ['10.1.0.7', '172.17.0.9', '10.50.0.9', '10.1.0.7'],
        6: ['fd00:11::7', 'fd01:17::9', 'fd00:50::9', 'fd00:11::7'],
      },
      {
        what: 'from A to a NatMapping address: its local endpoint',
        from: 'peerA',
        4: ['10.1.0.7', '172.17.0.1', '10.0.0.6', '10.1.0.7'],
        6: ['fd00:11::7', 'fd01:17::1', 'fd00:10::6', 'fd00:11::7'],
      },
      {
        what: "from our pod toward A: a source in A's view of our PodCIDR",
        from: 'pod',
        4: ['10.0.0.5', '10.1.0.7', '10.1.0.7', '172.16.0.5'],
        6: ['fd00:10::5', 'fd00:11::7', 'fd00:11::7', 'fd01:16::5'],
      },
      {
        what: "from our ExternalCIDR toward A: a source in A's view of our ExternalCIDR",
        from: 'pod',
        4: ['10.50.0.9', '10.1.0.7', '10.1.0.7', '172.17.0.9'],
        6: ['fd00:50::9', 'fd00:11::7', 'fd00:11::7', 'fd01:17::9'],
      },
      {
        what: "from our pod toward C: a source in C's view of our PodCIDR, not A's",
        from: 'pod',
        4: ['10.0.0.6', '10.2.0.5', '10.2.0.5', '192.168.0.6'],
        6: ['fd00:10::6', 'fd00:12::5', 'fd00:12::5', 'fd02:168::6'],
      },
      {
        what: "from C to our pod in C's view",
        from: 'peerC',
        4: ['10.2.0.5', '192.168.0.5', '10.0.0.5', '10.2.0.5'],
        6: ['fd00:12::5', 'fd02:168::5', 'fd00:10::5', 'fd00:12::5'],
      },
      {
        what: "from C to a NatMapping address in C's view",
        from: 'peerC',
        4: ['10.2.0.5', '10.90.0.1', '10.0.0.6', '10.2.0.5'],
        6: ['fd00:12::5', 'fd00:90::1', 'fd00:10::6', 'fd00:12::5'],
      },
      {
        what: "hub transit: A dials a NatMapping of C's pod; C sees our transit address in C's view",
        from: 'peerA',
        4: ['10.1.0.7', '172.17.0.2', '10.2.0.5', '10.90.0.254'],
        6: ['fd00:11::7', 'fd01:17::2', 'fd00:12::5', 'fd00:90::fe'],
      },
    ];
    for (const c of cases) {
      for (const family of [4, 6] as const) {
        const [source, target, local, from] = c[family];
        it(`IPv${family}, ${c.what}: ${source} to ${target} arrives at ${local} from ${from}; the reply comes from ${target}`, () => {
          assert.deepEqual(sendUdp(topology[c.from], source, target), { local, from, replyFrom: target });
        });
      }
    }
  });

  /*
   * Errors and fragments, as test/dataplane/ebpf/icmp-fragments.test.ts checks them on the eBPF NAT. Here conntrack
   * translates both: an ICMP error is related to the flow it quotes and gets its outer and quoted
   * addresses translated back; fragments are reassembled before NAT and fragmented again after it.
   * Every frame is captured on the interface it arrives on, in the namespace that receives it.
   */
  describe('ICMP errors and fragments through a gateway', () => {
    let topology: Topology;
    const captures: Capture[] = [];
    beforeEach(async () => {
      topology = new Topology();
      try {
        topology.build();
        assert.deepEqual(applyNat(natRuleset(spec(), devices), topology.gateway), { changed: true });
      } catch (err) {
        topology.cleanup();
        throw err;
      }
    });
    afterEach(async () => {
      for (const capture of captures.splice(0)) await capture.stop();
      topology.cleanup();
    });
    const capture = async (netns: string) => {
      const started = await Capture.start(netns, 'peer');
      captures.push(started);
      return started;
    };
    const question: L4 = { kind: 'udp', sport: 40001, dport: 7001, payload: Buffer.from('a question') };
    const questionZero: L4 = { ...question, zeroChecksum: true } as L4;
    const syn: L4 = { kind: 'tcp', sport: 40002, dport: 443, flags: 0x02 };
    const echo: L4 = { kind: 'icmp-echo', type: 8, id: 7, payload: Buffer.from('ping') };
    const portUnreachable = { type: IcmpType.DestUnreachable, code: 3 };
    const timeExceeded = { type: IcmpType.TimeExceeded, code: 0 };
    /*
     * Each datagram is sent as built (a raw socket, so its checksums are real, not left to offload) to a
     * port nobody listens on, or with a TTL that runs out in A, which forwards 10.1.0.99 back to us. The
     * error must arrive quoting the datagram exactly as its sender sent it, but for the TTL it had where
     * the error was raised: each forwarding hop takes one.
     */
    const cases: {
      what: string;
      from: () => string;
      sent: Ipv4Fields;
      l4: L4;
      at: () => string;
      error: { from: string; to: string; type: number; code: number };
      quoted: Ipv4Fields;
    }[] = [
      {
        what: "from A, about our pod's UDP datagram: to our pod, quoting its home addresses (inner UDP checksum fixed)",
        from: () => topology.pod,
        sent: { src: '10.0.0.5', dst: '10.1.0.7' },
        l4: question,
        at: () => topology.pod,
        error: { from: '10.1.0.7', to: '10.0.0.5', ...portUnreachable },
        quoted: { src: '10.0.0.5', dst: '10.1.0.7', ttl: 63 },
      },
      {
        what: 'from A, about a UDP datagram with a zero checksum (stays zero)',
        from: () => topology.pod,
        sent: { src: '10.0.0.5', dst: '10.1.0.7' },
        l4: questionZero,
        at: () => topology.pod,
        error: { from: '10.1.0.7', to: '10.0.0.5', ...portUnreachable },
        quoted: { src: '10.0.0.5', dst: '10.1.0.7', ttl: 63 },
      },
      {
        what: "from a router in A, about our pod's TCP segment (time exceeded)",
        from: () => topology.pod,
        sent: { src: '10.0.0.5', dst: '10.1.0.99', ttl: 2 },
        l4: syn,
        at: () => topology.pod,
        error: { from: '100.64.1.2', to: '10.0.0.5', ...timeExceeded },
        quoted: { src: '10.0.0.5', dst: '10.1.0.99', ttl: 1 },
      },
      {
        what: "from a router in A, about our pod's ICMP echo (time exceeded)",
        from: () => topology.pod,
        sent: { src: '10.0.0.5', dst: '10.1.0.99', ttl: 2 },
        l4: echo,
        at: () => topology.pod,
        error: { from: '100.64.1.2', to: '10.0.0.5', ...timeExceeded },
        quoted: { src: '10.0.0.5', dst: '10.1.0.99', ttl: 1 },
      },
      {
        what: "toward A, our pod's error about A's datagram: from, and quoting, the address A sent to",
        from: () => topology.peerA,
        sent: { src: '10.1.0.7', dst: '172.16.0.5' },
        l4: question,
        at: () => topology.peerA,
        error: { from: '172.16.0.5', to: '10.1.0.7', ...portUnreachable },
        quoted: { src: '10.1.0.7', dst: '172.16.0.5', ttl: 63 },
      },
      {
        what: 'toward A, through a NatMapping: from, and quoting, the NatMapping address A dialled',
        from: () => topology.peerA,
        sent: { src: '10.1.0.7', dst: '172.17.0.1' },
        l4: question,
        at: () => topology.peerA,
        error: { from: '172.17.0.1', to: '10.1.0.7', ...portUnreachable },
        quoted: { src: '10.1.0.7', dst: '172.17.0.1', ttl: 63 },
      },
      {
        what: "in hub transit: C's error to our transit address, about A's datagram, reaches A from, and quoting, the address A dialled",
        from: () => topology.peerA,
        sent: { src: '10.1.0.7', dst: '172.17.0.2' },
        l4: question,
        at: () => topology.peerA,
        error: { from: '172.17.0.2', to: '10.1.0.7', ...portUnreachable },
        quoted: { src: '10.1.0.7', dst: '172.17.0.2', ttl: 63 },
      },
    ];
    for (const c of cases) {
      it(`an ICMP error ${c.what}`, async () => {
        run(['ip', 'netns', 'exec', topology.peerA, 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
        ip(['route', 'add', '10.1.0.99/32', 'via', '100.64.1.1'], topology.peerA);
        const arriving = await capture(c.at());
        sendDatagram(c.from(), datagram(c.sent, c.l4));
        await waitFor('the ICMP error', () => icmpErrors(arriving.frames()).length > 0, 5_000);
        assert.deepEqual(icmpErrors(await arriving.stop()), [
          { ...c.error, quoting: `${c.quoted.src} -> ${c.quoted.dst}`, quote: datagram(c.quoted, c.l4).toString('hex'), checksums: [] },
        ]);
      });
    }

    // 3000 bytes: three fragments over the veths' MTU of 1500, each way (the echo sends the datagram back
    // after a line; sendUdp checks it came back whole).
    const fragmentCases = [
      {
        what: "from our pod to A: fragments from our pod in A's view, and the reply's to our pod",
        from: () => topology.pod,
        to: () => topology.peerA,
        source: '10.0.0.5',
        target: '10.1.0.7',
        echo: { local: '10.1.0.7', from: '172.16.0.5', replyFrom: '10.1.0.7' },
        there: threeFragments('172.16.0.5', '10.1.0.7', 8 + 3000),
        back: threeFragments('10.1.0.7', '10.0.0.5', 8 + 40 + 1 + 3000),
      },
      {
        what: "from A to a NatMapping address: fragments to its endpoint, and the reply's from the address A dialled",
        from: () => topology.peerA,
        to: () => topology.pod,
        source: '10.1.0.7',
        target: '172.17.0.1',
        echo: { local: '10.0.0.6', from: '10.1.0.7', replyFrom: '172.17.0.1' },
        there: threeFragments('10.1.0.7', '10.0.0.6', 8 + 3000),
        back: threeFragments('172.17.0.1', '10.1.0.7', 8 + 38 + 1 + 3000),
      },
      {
        what: "in hub transit from A to C: fragments from our transit address in C's view, and the reply's from the address A dialled",
        from: () => topology.peerA,
        to: () => topology.peerC,
        source: '10.1.0.7',
        target: '172.17.0.2',
        echo: { local: '10.2.0.5', from: '10.90.0.254', replyFrom: '172.17.0.2' },
        there: threeFragments('10.90.0.254', '10.2.0.5', 8 + 3000),
        back: threeFragments('172.17.0.2', '10.1.0.7', 8 + 41 + 1 + 3000),
      },
    ];
    for (const c of fragmentCases) {
      it(`a 3000-byte datagram ${c.what}; both reassemble`, async () => {
        await topology.serve(topology.pod, ['10.0.0.5', '10.0.0.6']);
        await topology.serve(topology.peerA, ['10.1.0.7']);
        await topology.serve(topology.peerC, ['10.2.0.5']);
        const atTarget = await capture(c.to());
        const atSource = await capture(c.from());
        // Without a reply, what did arrive says more than the timeout.
        const echo = (() => {
          try {
            return sendUdp(c.from(), c.source, c.target, 3000);
          } catch (err) {
            return String(err);
          }
        })();
        assert.deepEqual(udpFragments(await atTarget.stop()), c.there, 'the fragments arriving at the target');
        assert.deepEqual(echo, c.echo);
        assert.deepEqual(udpFragments(await atSource.stop()), c.back, "the reply's fragments arriving back");
      });
    }
  });

  /*
   * A CNI masquerading in the node's namespace, as flannel or calico (iptables mode) do: pod traffic
   * (10.0.0.0/16) to anything outside the pod network leaves from the interface's address. Either as its
   * own nftables table at priority srcnat or as the iptables-nft rule. The Topology's gateway namespace
   * is the node (a worker or the gateway); A's namespace is where the packet goes next and shows what source
   * it carries. A also holds 198.51.100.7, outside every remote prefix, and routes our PodCIDR back to the
   * node so that a pod source that was kept gets its reply (a wrong source fails on the address seen, not
   * on a timeout).
   */
  describe('avoid-masquerade: a CNI masquerading on the same node', () => {
    const MASQUERADED = '100.64.1.1';
    const cnis = [
      {
        name: 'an nftables table at srcnat',
        install: (netns: string) =>
          nft(
            [
              'table ip cni_nat {',
              '\tchain postrouting {',
              '\t\ttype nat hook postrouting priority srcnat; policy accept;',
              '\t\tip saddr 10.0.0.0/16 ip daddr != 10.0.0.0/16 masquerade',
              '\t}',
              '}',
              '',
            ].join('\n'),
            netns,
          ),
      },
      {
        name: 'iptables-nft',
        install: (netns: string) => {
          run([
            'ip',
            'netns',
            'exec',
            netns,
            'iptables-nft',
            '-t',
            'nat',
            '-A',
            'POSTROUTING',
            '-s',
            '10.0.0.0/16',
            '!',
            '-d',
            '10.0.0.0/16',
            '-j',
            'MASQUERADE',
          ]);
        },
      },
    ];

    let topology: Topology;
    const build = async (cni: (typeof cnis)[number]) => {
      topology = new Topology();
      try {
        topology.build();
        ip(['addr', 'add', '198.51.100.7/32', 'dev', 'lo'], topology.peerA);
        ip(['route', 'add', '10.0.0.0/16', 'via', '100.64.1.1'], topology.peerA);
        ip(['route', 'add', '198.51.100.7/32', 'via', '100.64.1.2'], topology.gateway);
        cni.install(topology.gateway);
        await topology.serve(topology.peerA, ['10.1.0.7', '198.51.100.7']);
        await topology.serve(topology.peerC, ['10.2.0.5']);
      } catch (err) {
        topology.cleanup();
        throw err;
      }
    };
    afterEach(() => topology?.cleanup());

    for (const cni of cnis) {
      it(`worker, CNI as ${cni.name}: a pod keeps its address toward remote prefixes, and only there`, async () => {
        await build(cni);
        // Without Strait's ruleset the CNI masquerades (each check uses its own source: conntrack keeps a
        // flow's first NAT decision).
        assert.equal(sendUdp(topology.pod, '10.0.0.6', '10.1.0.7').from, MASQUERADED);
        const worker = spec();
        worker.node.role = 'worker';
        assert.deepEqual(applyNat(natRuleset(worker, devices), topology.gateway), { changed: true });
        assert.deepEqual(sendUdp(topology.pod, '10.0.0.5', '10.1.0.7'), { local: '10.1.0.7', from: '10.0.0.5', replyFrom: '10.1.0.7' });
        assert.equal(
          sendUdp(topology.pod, '10.0.0.5', '198.51.100.7').from,
          MASQUERADED,
          'outside the remote prefixes the CNI still masquerades',
        );
        assert.deepEqual(applyNat(natRuleset(worker, devices), topology.gateway), { changed: false }, 'a second apply changes nothing');
      });

      it(`gateway, CNI as ${cni.name}: Strait's prefix and transit SNAT run first, not the identity one`, async () => {
        await build(cni);
        assert.equal(sendUdp(topology.pod, '10.0.0.6', '10.1.0.7').from, MASQUERADED, 'without Strait the CNI masquerades');
        assert.deepEqual(applyNat(natRuleset(spec(), devices), topology.gateway), { changed: true });
        // Not the pod's own address (the identity SNAT first) nor the node's (the CNI first).
        assert.deepEqual(sendUdp(topology.pod, '10.0.0.5', '10.1.0.7'), { local: '10.1.0.7', from: '172.16.0.5', replyFrom: '10.1.0.7' });
        assert.deepEqual(sendUdp(topology.pod, '10.0.0.6', '10.2.0.5'), { local: '10.2.0.5', from: '192.168.0.6', replyFrom: '10.2.0.5' });
        assert.equal(sendUdp(topology.peerA, '10.1.0.7', '172.17.0.2').from, '10.90.0.254');
        assert.deepEqual(applyNat(natRuleset(spec(), devices), topology.gateway), { changed: false }, 'a second apply changes nothing');
      });
    }
  });

  describe('reconciling', () => {
    const netns = netnsPerTest('strait-nat');

    const listOwned = () => run(['ip', 'netns', 'exec', netns(), 'nft', 'list', 'ruleset']);

    for (const c of [
      { name: 'IPv4', spec },
      { name: 'dual-stack', spec: dualStackSpec },
    ]) {
      it(`${c.name}: applying twice changes nothing the second time`, () => {
        const ruleset = natRuleset(c.spec(), devices);
        assert.deepEqual(applyNat(ruleset, netns()), { changed: true });
        const first = listOwned();
        assert.deepEqual(applyNat(ruleset, netns()), { changed: false });
        assert.equal(listOwned(), first);
      });
    }

    for (const c of [
      { family: 'IPv4', spec, table: 'ip', natMapping: '10.50.0.1' },
      { family: 'IPv6', spec: dualStackSpec, table: 'ip6', natMapping: 'fd00:50::1' },
    ]) {
      it(`${c.family}: restores a rule, a NatMapping element and the identity SNAT of the family deleted by hand`, () => {
        const ruleset = natRuleset(c.spec(), devices);
        applyNat(ruleset, netns());
        const wanted = listOwned();
        const listing = run(['ip', 'netns', 'exec', netns(), 'nft', '-a', 'list', 'chain', c.table, 'strait', 'to_peers']);
        const handle = new RegExp(`oifname "stp00000009" snat ${c.table} prefix .* # handle (\\d+)`).exec(listing)?.[1];
        assert.ok(handle, listing);
        nft(`delete rule ${c.table} strait to_peers handle ${handle}\n`, netns());
        assert.deepEqual(applyNat(ruleset, netns()), { changed: true });
        assert.equal(listOwned(), wanted);

        nft(`delete element ${c.table} strait natmappings { ${c.natMapping} }\n`, netns());
        assert.doesNotMatch(listOwned(), new RegExp(`${c.natMapping} : `));
        assert.deepEqual(applyNat(ruleset, netns()), { changed: true });
        assert.equal(listOwned(), wanted);

        const avoid = run(['ip', 'netns', 'exec', netns(), 'nft', '-a', 'list', 'chain', 'inet', 'strait_filter', 'avoid_masquerade']);
        const identity = new RegExp(`${c.table} daddr @remote_prefixes6? snat ${c.table} to ${c.table} saddr # handle (\\d+)`).exec(
          avoid,
        )?.[1];
        assert.ok(identity, avoid);
        nft(`delete rule inet strait_filter avoid_masquerade handle ${identity}\n`, netns());
        assert.deepEqual(applyNat(ruleset, netns()), { changed: true });
        assert.equal(listOwned(), wanted);
        assert.deepEqual(applyNat(ruleset, netns()), { changed: false });
      });
    }

    it('replaces the NAT table when the spec changes, and a worker keeps only the avoid-masquerade set and chain', () => {
      applyNat(natRuleset(spec(), devices), netns());
      const worker = spec();
      worker.node.role = 'worker';
      assert.deepEqual(applyNat(natRuleset(worker, devices), netns()), { changed: true });
      const listing = listOwned();
      assert.doesNotMatch(listing, /table ip strait/);
      assert.match(
        listing,
        /table inet strait_filter \{\n\tset remote_prefixes \{\n\t\ttype ipv4_addr\n\t\tflags interval\n\t\telements = \{ 10\.1\.0\.0\/16, 10\.2\.0\.0\/20,\s+10\.60\.0\.0\/24, 10\.70\.0\.0\/24 \}\n\t\}\n\n\tchain avoid_masquerade \{\n\t\ttype nat hook postrouting priority srcnat - 5; policy accept;\n\t\tip daddr @remote_prefixes snat ip to ip saddr\n\t\}\n\n\tchain clamp_mss \{\n\t\ttype filter hook forward priority mangle; policy accept;\n\t\toifname "strait.vxlan" tcp flags syn \/ syn,rst tcp option maxseg size set rt mtu\n\t\tiifname "strait.vxlan" tcp flags syn \/ syn,rst tcp option maxseg size set 1410\n\t\}\n\}\n$/,
      );
    });

    it("never touches another table, and removeNat deletes only Strait's", () => {
      nft(
        [
          'table ip foreign {',
          '\tset clients { type ipv4_addr; elements = { 10.1.0.7 } }',
          '\tchain post { type nat hook postrouting priority srcnat; policy accept; ip saddr 10.0.0.0/16 oifname "stp0000002a" masquerade; }',
          '\tchain pre { type nat hook prerouting priority dstnat; policy accept; ip saddr @clients udp dport 53 dnat to 10.0.0.53; }',
          '}',
          'table inet strait_other { chain c { type filter hook forward priority 0; policy accept; counter; }; }',
          '',
        ].join('\n'),
        netns(),
      );
      const foreign = () =>
        run(['ip', 'netns', 'exec', netns(), 'nft', '-a', 'list', 'ruleset']).replace(
          /table ip strait \{[\s\S]*?\n\}\n|table inet strait_filter \{[\s\S]*?\n\}\n/g,
          '',
        );
      const before = foreign();
      applyNat(natRuleset(spec(), devices), netns());
      assert.equal(foreign(), before);
      assert.deepEqual(removeNat(netns()), { changed: true });
      assert.equal(run(['ip', 'netns', 'exec', netns(), 'nft', '-a', 'list', 'ruleset']), before);
      assert.deepEqual(removeNat(netns()), { changed: false });
    });

    it('applies 10,000 NatMappings as one map in one transaction', () => {
      const big = specDocument();
      big.externalCIDR = '10.50.0.0/16';
      big.peers[0]!.localNATExternalCIDR = '172.17.0.0/16';
      big.peers[1]!.localNATExternalCIDR = '10.90.0.0/16';
      big.natMappings = Array.from({ length: 10_000 }, (_, i) => ({
        externalAddress: `10.50.${1 + (i >> 8)}.${i & 0xff}`,
        endpointAddress: `10.0.${i >> 8}.${i & 0xff}`,
      }));
      const ruleset = natRuleset(readNodeDataplaneSpec(big), devices);
      const started = process.hrtime.bigint();
      assert.deepEqual(applyNat(ruleset, netns()), { changed: true });
      const applyMs = Number(process.hrtime.bigint() - started) / 1e6;
      const again = process.hrtime.bigint();
      assert.deepEqual(applyNat(ruleset, netns()), { changed: false });
      const checkMs = Number(process.hrtime.bigint() - again) / 1e6;
      console.log(`      10,000 NatMappings: apply ${applyMs.toFixed(0)} ms, unchanged check ${checkMs.toFixed(0)} ms`);
      const listing = run(['ip', 'netns', 'exec', netns(), 'nft', '-j', 'list', 'map', 'ip', 'strait', 'natmappings']);
      const map = (JSON.parse(listing) as { nftables: { map?: { elem: [string, string][] } }[] }).nftables.find((o) => o.map)!.map!;
      assert.equal(map.elem.length, 10_000);
      assert.ok(map.elem.some(([k, v]) => k === '10.50.40.15' && v === '10.0.39.15'));
    });
  });

  /*
   * Known answers: the tables as the kernel listed them (normalised as applyNat compares them) after the
   * fallback installed them as an nft-syntax ruleset, before it wrote nft's JSON instead. The document
   * natRuleset writes now must make exactly that state.
   */
  describe('the kernel state of the ruleset', () => {
    const listings = JSON.parse(
      readFileSync(join(__dirname, '..', '..', '..', '..', 'test', 'dataplane', 'kernel', 'nat-ruleset.listing.json'), 'utf8'),
    ) as Record<string, unknown>;
    const netns = netnsPerTest('strait-nat');

    const ownedListing = () =>
      Object.fromEntries(
        [...liveState(netns())].map(([table, lines]) => [
          table,
          lines
            .trimEnd()
            .split('\n')
            .map((line) => JSON.parse(line) as unknown),
        ]),
      );
    const worker = () => {
      const s = spec();
      s.node.role = 'worker';
      return s;
    };
    const ipsecToA = () => {
      const s = spec();
      s.peers[0]!.transport = 'ipsec';
      return s;
    };
    const cases = [
      { name: 'gateway', spec, mtus: undefined },
      { name: 'worker', spec: worker, mtus: undefined },
      { name: 'gateway, IPsec to A, 9000-byte underlay', spec: ipsecToA, mtus: { vxlan: 8950, ipsec: 8920 } },
      // Recorded from the first install of the IPv6 tables (the IPv4 ones above are unchanged by them).
      { name: 'gateway, dual-stack', spec: dualStackSpec, mtus: undefined },
      { name: 'worker, dual-stack', spec: () => ({ ...dualStackSpec(), node: { ...worker().node } }), mtus: undefined },
      { name: 'gateway, IPv6-only', spec: ipv6OnlySpec, mtus: undefined },
      { name: 'worker, IPv6-only', spec: () => ({ ...ipv6OnlySpec(), node: { ...worker().node } }), mtus: undefined },
    ];
    for (const c of cases) {
      it(`${c.name}: the tables the kernel lists are the known answer`, () => {
        applyNat(natRuleset(c.spec(), devices, c.mtus), netns());
        assert.deepEqual(ownedListing(), listings[c.name]);
      });
    }

    it('the IPv6-only answers are the dual-stack ones without IPv4: no `ip strait`, no remote_prefixes or its rule, `ip6 strait` the same', () => {
      const isIpv4 = (line: unknown) => {
        const text = JSON.stringify(line);
        return text.includes('"name":"remote_prefixes"') || text.includes('"right":"@remote_prefixes"');
      };
      for (const role of ['gateway', 'worker']) {
        const dual = listings[`${role}, dual-stack`] as Record<string, unknown[]>;
        const { 'ip strait': _ipv4, ...rest } = dual;
        const expected = { ...rest, 'inet strait_filter': dual['inet strait_filter']!.filter((line) => !isIpv4(line)) };
        assert.ok(dual['inet strait_filter']!.some(isIpv4), role);
        assert.deepEqual(listings[`${role}, IPv6-only`], expected, role);
      }
    });
  });

  describe('input checking', () => {
    it('takes values only from a spec its reader checked: what could reach nft is refused there, naming the field', () => {
      const rejects = (change: (s: NodeDataplaneSpecDocument) => void, field: string) => {
        const s = specDocument();
        change(s);
        assert.throws(
          () => readNodeDataplaneSpec(s),
          (err: unknown) => err instanceof InputError && err.field === field,
        );
      };
      rejects((s) => (s.externalCIDR = '10.50.0.0/24; flush ruleset'), 'spec.externalCIDR');
      rejects((s) => (s.transitAddress = '10.50.0.254 flush ruleset'), 'spec.transitAddress');
      rejects((s) => (s.transitAddress = '10.51.0.1'), 'spec.transitAddress');
      rejects((s) => (s.peers[0]!.localNATPodCIDR = '172.16.0.0/20'), 'spec.peers[0].localNATPodCIDR');
      rejects((s) => (s.peers[1]!.localNATExternalCIDR = '10.90.0.0/16'), 'spec.peers[1].localNATExternalCIDR');
      rejects((s) => (s.peers[1]!.remotePodCIDR = '10.1.8.0/24'), 'spec.peers[1].remotePodCIDR');
      rejects((s) => (s.peers[0]!.remoteExternalCIDR = '10.0.5.0/24'), 'spec.peers[0].remoteExternalCIDR');
      rejects((s) => (s.natMappings[1]!.externalAddress = '10.0.0.9'), 'spec.natMappings[1].externalAddress');
      rejects((s) => (s.node.role = 'router' as 'gateway'), 'spec.node.role');
    });

    it('refuses a tunnel interface name no interface can have', () => {
      const peerInterface = (id: number) => (id === 42 ? 'eth0" accept' : devices.peerInterface(id));
      assert.throws(
        () => natRuleset(spec(), { ...devices, peerInterface }),
        (err: unknown) => err instanceof InputError && err.field === 'devices.peerInterface(42)',
      );
    });

    describe("refuses a document with a command outside Strait's tables, naming the command and the table", () => {
      // In a namespace of its own: were the guard broken, the document would be written there, not here.
      const netns = netnsPerTest('strait-nat');

      const owned = natRuleset(spec(), devices).nftables;
      const refused: { what: string; command: unknown; value: string }[] = [
        { what: 'another table', command: { add: { table: { family: 'ip', name: 'filter' } } }, value: 'add table ip filter' },
        {
          what: "Strait's table name in another family",
          command: { add: { table: { family: 'inet', name: 'strait' } } },
          value: 'add table inet strait',
        },
        {
          what: 'a rule in a chain of another table',
          command: { add: { rule: { family: 'ip', table: 'nat', chain: 'POSTROUTING', expr: [{ masquerade: null }] } } },
          value: 'add rule ip nat',
        },
        { what: 'a flush of the whole ruleset', command: { flush: { ruleset: null } }, value: 'flush ruleset (no table)' },
        {
          what: 'one command naming two objects',
          command: { add: { table: { family: 'ip', name: 'strait' }, chain: { family: 'ip', table: 'filter', name: 'c' } } },
          value: 'add table+chain (no table)',
        },
      ];
      for (const r of refused) {
        it(r.what, () => {
          const ruleset = { nftables: [...owned, r.command] } as NftDocument;
          assert.throws(
            () => applyNat(ruleset, netns()),
            (err: unknown) => err instanceof InputError && err.field === `ruleset.nftables[${owned.length}]` && err.value === r.value,
          );
          assert.equal(liveState(netns()).size, 0, 'nothing of the document was written');
        });
      }
    });
  });
});

describe('fallback: nftables NAT ruleset', () => {
  const chainsOf = (ruleset: NftDocument) => ruleset.nftables.flatMap((c) => ('add' in c && 'chain' in c.add ? [c.add.chain] : []));
  const rulesOf = (ruleset: NftDocument, chain: string) =>
    ruleset.nftables.flatMap((c) => ('add' in c && 'rule' in c.add && c.add.rule.chain === chain ? [c.add.rule.expr] : []));
  const syn = { match: { op: '==', left: { '&': [{ payload: { protocol: 'tcp', field: 'flags' } }, ['syn', 'rst']] }, right: 'syn' } };
  const setMss = (value: unknown) => ({ mangle: { key: { 'tcp option': { name: 'maxseg', field: 'size' } }, value } });
  const iifname = (right: unknown) => ({ match: { op: '==', left: { meta: { key: 'iifname' } }, right } });
  const oifname = (right: unknown) => ({ match: { op: '==', left: { meta: { key: 'oifname' } }, right } });
  const prefix = (addr: string, len: number) => ({ prefix: { addr, len } });

  it('a worker: the remote prefixes and the identity SNAT to them, before a CNI at srcnat', () => {
    const worker = spec();
    worker.node.role = 'worker';
    const at = { family: 'inet', table: 'strait_filter' };
    assert.deepEqual(natRuleset(worker, devices), {
      nftables: [
        { add: { table: { family: 'inet', name: 'strait_filter' } } },
        { add: { set: { ...at, name: 'remote_prefixes', type: 'ipv4_addr', flags: ['interval'] } } },
        {
          add: {
            element: {
              ...at,
              name: 'remote_prefixes',
              elem: [prefix('10.1.0.0', 16), prefix('10.2.0.0', 20), prefix('10.60.0.0', 24), prefix('10.70.0.0', 24)],
            },
          },
        },
        // srcnat - 5
        { add: { chain: { ...at, name: 'avoid_masquerade', type: 'nat', hook: 'postrouting', prio: 95, policy: 'accept' } } },
        {
          add: {
            rule: {
              ...at,
              chain: 'avoid_masquerade',
              expr: [
                { match: { op: '==', left: { payload: { protocol: 'ip', field: 'daddr' } }, right: '@remote_prefixes' } },
                { snat: { family: 'ip', addr: { payload: { protocol: 'ip', field: 'saddr' } } } },
              ],
            },
          },
        },
        // mangle
        { add: { chain: { ...at, name: 'clamp_mss', type: 'filter', hook: 'forward', prio: -150, policy: 'accept' } } },
        { add: { rule: { ...at, chain: 'clamp_mss', expr: [oifname({ set: ['strait.vxlan'] }), syn, setMss({ rt: { key: 'mtu' } })] } } },
        { add: { rule: { ...at, chain: 'clamp_mss', expr: [iifname('strait.vxlan'), syn, setMss(1410)] } } },
      ],
    });
  });

  it('a gateway clamps the MSS through every tunnel: to the route MTU leaving, to the tunnel MTU less 40 arriving (IPsec: less)', () => {
    const gateway = spec();
    gateway.peers[0]!.transport = 'ipsec';
    assert.deepEqual(rulesOf(natRuleset(gateway, devices, { vxlan: 8950, ipsec: 8920 }), 'clamp_mss'), [
      [oifname({ set: ['strait.vxlan', 'stp0000002a', 'stp00000009'] }), syn, setMss({ rt: { key: 'mtu' } })],
      [iifname('strait.vxlan'), syn, setMss(8910)],
      [iifname('stp0000002a'), syn, setMss(8880)],
      [iifname('stp00000009'), syn, setMss(8910)],
    ]);
    assert.equal(gateway.peers[0]!.peerId, 42, 'the encrypted peering is stp0000002a');
  });

  it("a gateway: Strait's own SNAT (to_peers) runs before the identity SNAT, both before srcnat (100)", () => {
    const chains = chainsOf(natRuleset(spec(), devices)).filter((c) => c.type === 'nat' && c.hook === 'postrouting');
    assert.deepEqual(chains.map((c) => c.name).sort(), ['avoid_masquerade', 'to_peers']);
    const [toPeers, avoid] = ['to_peers', 'avoid_masquerade'].map((name) => chains.find((c) => c.name === name)!.prio);
    assert.ok(toPeers! < avoid! && avoid! < 100, `to_peers ${toPeers}, avoid_masquerade ${avoid}`);
  });
});

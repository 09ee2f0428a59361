import assert from 'node:assert/strict';
import * as layout from '../../../src/dataplane/ebpf/layout';
import { DROP_REASON_COUNT, DropReason } from '../../../src/dataplane/ebpf/layout';
import { requireRoot } from '../../support/kernel';
import { u32 } from '../../../src/native';
import { type L4, type Macs, checksumProblems, datagram, datagram6, ethernet, fragments, frame, frame6 } from '../../support/packet';
import { Datapath, TC_ACT_REDIRECT, home, macsToward, peerP, peerQ, translate } from './fixture';
import { home6, natMappings6, peerP6, programIpv6, translate6 } from './fixture6';

/*
 * L is the hub: 10.201.5.8 (our ExternalCIDR) is a NatMapping for 172.16.9.9, a pod of P, reflected to
 * Q (which sees our networks unremapped). Q's pod 10.32.1.2 talks to it through us.
 */
const qPod = '10.32.1.2';
const pPod = '172.16.9.9';
const reflected = '10.201.5.8';
const transitSeenByP = translate(home.transit, peerP.localNatExternal); // 10.70.9.250

type Flow = { forward: (sport: number) => L4; reply: (port: number) => L4; portOf: (f: Buffer) => number };
const ICMP_ID_AT = 14 + 20 + 4;
const UDP = 17;
/** strait_snat's keys for a UDP flow from Q's pod to P's pod (after DNAT), and for its replies to transit:port. */
const forwardKey = (sport: number) => ({ saddr: qPod, daddr: pPod, sport, dport: 53, proto: UDP });
const replyKey = (port: number) => ({ saddr: pPod, daddr: home.transit, sport: 53, dport: port, proto: UDP });
const flows: Record<string, Flow> = {
  TCP: {
    forward: (p) => ({ kind: 'tcp', sport: p, dport: 443, payload: Buffer.from('hi') }),
    reply: (p) => ({ kind: 'tcp', sport: 443, dport: p, payload: Buffer.from('ho') }),
    portOf: (f) => f.readUInt16BE(34),
  },
  UDP: {
    forward: (p) => ({ kind: 'udp', sport: p, dport: 53, payload: Buffer.from('q') }),
    reply: (p) => ({ kind: 'udp', sport: 53, dport: p, payload: Buffer.from('a') }),
    portOf: (f) => f.readUInt16BE(34),
  },
  'UDP with a zero checksum': {
    forward: (p) => ({ kind: 'udp', sport: p, dport: 53, payload: Buffer.from('q'), zeroChecksum: true }),
    reply: (p) => ({ kind: 'udp', sport: 53, dport: p, payload: Buffer.from('a'), zeroChecksum: true }),
    portOf: (f) => f.readUInt16BE(34),
  },
  'ICMP echo': {
    forward: (id) => ({ kind: 'icmp-echo', type: 8, id }),
    reply: (id) => ({ kind: 'icmp-echo', type: 0, id }),
    portOf: (f) => f.readUInt16BE(ICMP_ID_AT),
  },
};

describe('datapath: hub transit (BPF_PROG_TEST_RUN)', function () {
  requireRoot(this);
  let dp: Datapath;
  beforeEach(async () => {
    dp = (await Datapath.load()).program('gateway');
  });
  afterEach(() => dp?.close());

  for (const [what, flow] of Object.entries(flows)) {
    it(`${what}: SNAT to the transit address toward P, and back to Q from the address Q sent to`, () => {
      const forward = dp.run('fromOverlay', frame({ src: qPod, dst: reflected }, flow.forward(40001)));
      assert.equal(forward.retval, TC_ACT_REDIRECT);
      const port = flow.portOf(forward.data);
      assert.ok(port >= 32768 && port <= 65535, `port ${port}`);
      assert.equal(
        forward.data.toString('hex'),
        frame({ src: transitSeenByP, dst: pPod }, flow.forward(port), macsToward(peerP)).toString('hex'),
      );

      // The same flow keeps its port.
      assert.equal(flow.portOf(dp.run('fromOverlay', frame({ src: qPod, dst: reflected }, flow.forward(40001))).data), port);

      dp.expect(
        'fromOverlay',
        frame({ src: pPod, dst: transitSeenByP }, flow.reply(port)),
        TC_ACT_REDIRECT,
        frame({ src: reflected, dst: qPod }, flow.reply(40001), macsToward(peerQ)),
      );
    });
  }

  it("keeps the source's own port when it is free and in 32768..65535, and picks another when it is not", () => {
    const portOf = (sport: number) =>
      flows.UDP!.portOf(dp.run('fromOverlay', frame({ src: qPod, dst: reflected }, flows.UDP!.forward(sport))).data);
    assert.equal(portOf(40001), 40001);
    dp.maps.snat.update(replyKey(40002), { addr: '10.32.1.3', port: 40002, flags: 0, closedNs: 0n });
    const moved = portOf(40002);
    assert.notEqual(moved, 40002, 'another flow holds 40002');
    assert.ok(moved >= 32768 && moved <= 65535, `port ${moved}`);
    const low = portOf(1234);
    assert.ok(low >= 32768 && low <= 65535, `a port below the range is not kept: ${low}`);
  });

  it('gives another flow another port, and each reply finds its own flow', () => {
    const ports = [40001, 40002].map((sport) =>
      flows.UDP!.portOf(dp.run('fromOverlay', frame({ src: qPod, dst: reflected }, flows.UDP!.forward(sport))).data),
    );
    assert.notEqual(ports[0], ports[1]);
    dp.expect(
      'fromOverlay',
      frame({ src: pPod, dst: transitSeenByP }, flows.UDP!.reply(ports[1]!)),
      TC_ACT_REDIRECT,
      frame({ src: reflected, dst: qPod }, flows.UDP!.reply(40002), macsToward(peerQ)),
    );
    dp.expect(
      'fromOverlay',
      frame({ src: pPod, dst: transitSeenByP }, flows.UDP!.reply(ports[0]!)),
      TC_ACT_REDIRECT,
      frame({ src: reflected, dst: qPod }, flows.UDP!.reply(40001), macsToward(peerQ)),
    );
  });

  it('a source that is itself reflected needs no state: it gets its ExternalCIDR address', async () => {
    dp.mapExternal('10.201.5.9', qPod); // Q's pod reflected to P as 10.201.5.9
    const l4 = flows.TCP!.forward(40001);
    dp.expect(
      'fromOverlay',
      frame({ src: qPod, dst: reflected }, l4),
      TC_ACT_REDIRECT,
      frame({ src: translate('10.201.5.9', peerP.localNatExternal), dst: pPod }, l4, macsToward(peerP)),
    );
    assert.deepEqual([...dp.maps.snat.keys()], []);
    assert.deepEqual((await dp.tunnelOf('fromOverlay', frame({ src: qPod, dst: reflected }, l4))).tunnel, {
      remote: peerP.endpoint,
      vni: peerP.vni,
      ttl: 64,
    });
  });

  it('an ICMP error from a reflected endpoint crosses the hub with both quoted addresses mirrored', () => {
    dp.mapExternal('10.201.5.9', qPod);
    const qSeenByP = translate('10.201.5.9', peerP.localNatExternal);
    // P's pod answers Q's (reflected) UDP datagram with port unreachable.
    const error = (quoted: Buffer): L4 => ({ kind: 'icmp-error', type: 3, code: 3, quote: quoted });
    const input = frame({ src: pPod, dst: qSeenByP }, error(datagram({ src: qSeenByP, dst: pPod }, flows.UDP!.forward(40001))));
    const expected = frame(
      { src: reflected, dst: qPod },
      error(datagram({ src: qPod, dst: reflected }, flows.UDP!.forward(40001))),
      macsToward(peerQ),
    );
    dp.expect('fromOverlay', input, TC_ACT_REDIRECT, expected);
  });

  describe('ICMP errors about a transit flow find it through their quote', () => {
    const error = (quoted: Buffer, code = 3): L4 => ({ kind: 'icmp-error', type: 3, code, quote: quoted });
    const cases: [string, Flow, string, number | undefined][] = [
      ['from the endpoint, quoting a whole UDP datagram', flows.UDP!, pPod, undefined],
      ['from the endpoint, quoting a UDP datagram with a zero checksum', flows['UDP with a zero checksum']!, pPod, undefined],
      ["from a router in P (fragmentation needed), quoting a TCP header's first 8 bytes", flows.TCP!, '172.16.0.1', 20 + 8],
      ['from a router in P, quoting a TCP header with its checksum', flows.TCP!, '172.16.0.1', 20 + 20],
    ];
    for (const [what, flow, from, quoteLength] of cases) {
      it(what, () => {
        const port = flow.portOf(dp.run('fromOverlay', frame({ src: qPod, dst: reflected }, flow.forward(40001))).data);
        const sent = datagram({ src: transitSeenByP, dst: pPod }, flow.forward(port)).subarray(0, quoteLength);
        const asQSent = datagram({ src: qPod, dst: reflected }, flow.forward(40001)).subarray(0, quoteLength);
        // Q sees the error come from the address it sent to, about the datagram it sent.
        dp.expect(
          'fromOverlay',
          frame({ src: from, dst: transitSeenByP }, error(sent, 4)),
          TC_ACT_REDIRECT,
          frame({ src: reflected, dst: qPod }, error(asQSent, 4), macsToward(peerQ)),
        );
      });
    }

    it('drops an error about a flow it does not know', () => {
      const sent = datagram({ src: transitSeenByP, dst: pPod }, flows.UDP!.forward(33333));
      dp.expectDrop('fromOverlay', frame({ src: pPod, dst: transitSeenByP }, error(sent)), DropReason.TransitState);
    });
  });

  it('the reply is tunnelled to Q', async () => {
    const port = flows.UDP!.portOf(dp.run('fromOverlay', frame({ src: qPod, dst: reflected }, flows.UDP!.forward(40001))).data);
    assert.deepEqual((await dp.tunnelOf('fromOverlay', frame({ src: pPod, dst: transitSeenByP }, flows.UDP!.reply(port)))).tunnel, {
      remote: peerQ.endpoint,
      vni: peerQ.vni,
      ttl: 64,
    });
  });

  it('drops what it cannot map back: later fragments, other protocols, ICMP errors, unknown replies', () => {
    const [, later] = fragments({ src: qPod, dst: reflected }, { kind: 'udp', sport: 1, dport: 2, payload: Buffer.alloc(64) }, 32);
    dp.expectDrop('fromOverlay', ethernet(later!), DropReason.TransitState);
    dp.expectDrop(
      'fromOverlay',
      frame({ src: qPod, dst: reflected }, { kind: 'raw', proto: 47, payload: Buffer.alloc(8) }),
      DropReason.TransitState,
    );
    dp.expectDrop(
      'fromOverlay',
      frame(
        { src: qPod, dst: reflected },
        { kind: 'icmp-error', type: 3, code: 1, quote: datagram({ src: reflected, dst: qPod }, flows.UDP!.reply(40001)) },
      ),
      DropReason.TransitState,
    );
    dp.expectDrop('fromOverlay', frame({ src: pPod, dst: transitSeenByP }, flows.UDP!.reply(33333)), DropReason.TransitState);
  });

  describe('a flow whose half the LRU evicted alone keeps its port', () => {
    /** strait_snat's keys for each flow kind from Q's pod port/id 40001, and for the reply to transit:port. */
    const keys: Record<string, { forward: ReturnType<typeof forwardKey>; reply: (port: number) => ReturnType<typeof replyKey> }> = {
      TCP: {
        forward: { saddr: qPod, daddr: pPod, sport: 40001, dport: 443, proto: 6 },
        reply: (port) => ({ saddr: pPod, daddr: home.transit, sport: 443, dport: port, proto: 6 }),
      },
      UDP: { forward: forwardKey(40001), reply: replyKey },
      'ICMP echo': {
        forward: { saddr: qPod, daddr: pPod, sport: 40001, dport: 40001, proto: 1 },
        reply: (id) => ({ saddr: pPod, daddr: home.transit, sport: id, dport: id, proto: 1 }),
      },
    };
    for (const [what, key] of Object.entries(keys)) {
      const flow = flows[what]!;
      const send = () => dp.run('fromOverlay', frame({ src: qPod, dst: reflected }, flow.forward(40001)));
      const reply = (port: number) =>
        dp.expect(
          'fromOverlay',
          frame({ src: pPod, dst: transitSeenByP }, flow.reply(port)),
          TC_ACT_REDIRECT,
          frame({ src: reflected, dst: qPod }, flow.reply(40001), macsToward(peerQ)),
        );

      it(`${what}: the next forward packet puts the reverse half back`, () => {
        const port = flow.portOf(send().data);
        assert.equal(dp.maps.snat.delete(key.reply(port)), true);
        assert.equal(flow.portOf(send().data), port, 'the flow keeps its port');
        assert.deepEqual(
          dp.maps.snat.lookup(key.reply(port)),
          { addr: qPod, port: 40001, flags: 0, closedNs: 0n },
          'the reverse half is back',
        );
        reply(port);
      });

      it(`${what}: the next reply puts the forward half back`, () => {
        const port = flow.portOf(send().data);
        assert.equal(dp.maps.snat.delete(key.forward), true);
        reply(port);
        assert.deepEqual(
          dp.maps.snat.lookup(key.forward),
          { addr: home.transit, port, flags: 0, closedNs: 0n },
          'the forward half is back',
        );
        assert.equal(flow.portOf(send().data), port, 'the flow keeps its port');
        assert.equal([...dp.maps.snat.keys()].length, 2, 'one flow, two halves');
      });
    }

    it('a forward packet whose port another flow took meanwhile gets a new port, and leaves the other flow alone', () => {
      const send = () => dp.run('fromOverlay', frame({ src: qPod, dst: reflected }, flows.UDP!.forward(40001)));
      const port = flows.UDP!.portOf(send().data);
      // The reverse half evicted, and its port given to another flow from Q (10.32.1.3:40005).
      dp.maps.snat.update(replyKey(port), { addr: '10.32.1.3', port: 40005, flags: 0, closedNs: 0n });
      const moved = flows.UDP!.portOf(send().data);
      assert.notEqual(moved, port);
      assert.deepEqual(dp.maps.snat.lookup(forwardKey(40001)), { addr: home.transit, port: moved, flags: 0, closedNs: 0n });
      assert.deepEqual(dp.maps.snat.lookup(replyKey(moved)), { addr: qPod, port: 40001, flags: 0, closedNs: 0n });
      assert.deepEqual(
        dp.maps.snat.lookup(replyKey(port)),
        { addr: '10.32.1.3', port: 40005, flags: 0, closedNs: 0n },
        "the other flow's reverse half is untouched",
      );
    });
  });

  it('a forward packet of an established flow writes nothing: 3,000 of them in a strait_snat of 2 entries leave both halves as they were', async () => {
    // An update, even of an existing key, takes a free node first; a full LRU evicts an entry to find one.
    const full = (await Datapath.load((obj) => obj.setMaxEntries('strait_snat', 2))).program('gateway');
    try {
      const send = () => full.run('fromOverlay', frame({ src: qPod, dst: reflected }, flows.UDP!.forward(40001)));
      const port = flows.UDP!.portOf(send().data);
      const entry = (v: { addr: string; port: number; flags: number; closedNs: bigint }) =>
        `${v.addr}:${v.port} flags ${v.flags} closed ${v.closedNs}`;
      const halves = () => [...full.maps.snat.entries()].map(([k, v]) => `${JSON.stringify(k)} ${entry(v)}`).sort();
      const expected = [
        `${JSON.stringify(forwardKey(40001))} ${home.transit}:${port} flags 0 closed 0`,
        `${JSON.stringify(replyKey(port))} ${qPod}:40001 flags 0 closed 0`,
      ].sort();
      assert.deepEqual(halves(), expected);
      for (let i = 0; i < 3000; i++) assert.equal(flows.UDP!.portOf(send().data), port, `packet ${i + 2} keeps the port`);
      assert.deepEqual(halves(), expected);
    } finally {
      full.close();
    }
  });

  it('drops a new flow as TransitState when STRAIT_SNAT_TRIES (8) ports in a row are taken, and finds the one free port among 8 otherwise', () => {
    // Every port of 32768..65535 taken for replies from P's pod:53, so every candidate is.
    const ports = Array.from({ length: 32768 }, (_, i) => 32768 + i);
    dp.maps.snat.updateBatch(ports.map((port) => [replyKey(port), { addr: '10.32.9.9', port: 9, flags: 0, closedNs: 0n }]));
    dp.expectDrop('fromOverlay', frame({ src: qPod, dst: reflected }, flows.UDP!.forward(40001)), DropReason.TransitState);
    assert.equal([...dp.maps.snat.keys()].length, 32768, 'a failed allocation leaves no state behind');

    // Every 8th port free: whatever the random start, 8 tries in a row meet exactly one.
    dp.maps.snat.deleteBatch(ports.filter((port) => port % 8 === 0).map(replyKey));
    for (let sport = 40002; sport < 40018; sport++) {
      const forward = dp.run('fromOverlay', frame({ src: qPod, dst: reflected }, flows.UDP!.forward(sport)));
      assert.equal(forward.retval, TC_ACT_REDIRECT, `flow from port ${sport}`);
      const port = flows.UDP!.portOf(forward.data);
      assert.equal(port % 8, 0, `port ${port} was free`);
      dp.expect(
        'fromOverlay',
        frame({ src: pPod, dst: transitSeenByP }, flows.UDP!.reply(port)),
        TC_ACT_REDIRECT,
        frame({ src: reflected, dst: qPod }, flows.UDP!.reply(sport), macsToward(peerQ)),
      );
      // Free its port again, so the next flow meets the same pattern.
      assert.equal(dp.maps.snat.delete(replyKey(port)), true);
    }
    assert.deepEqual(
      dp.drops(),
      dp.drops().map((_, r) => (r === DropReason.TransitState ? 1 : 0)),
      'the one drop, as TransitState',
    );
  });

  describe('a closed TCP flow gives its port back', () => {
    const [FIN_ACK, RST, SYN, SYN_ACK] = [0x11, 0x04, 0x02, 0x12];
    const tcp = (sport: number, dport: number, flags: number): L4 => ({ kind: 'tcp', sport, dport, flags });
    const tcpReplyKey = (port: number) => ({ saddr: pPod, daddr: home.transit, sport: 443, dport: port, proto: 6 });
    const open = (sport: number) => dp.run('fromOverlay', frame({ src: qPod, dst: reflected }, tcp(sport, 443, SYN)));
    const forward = (sport: number, flags: number) => dp.run('fromOverlay', frame({ src: qPod, dst: reflected }, tcp(sport, 443, flags)));
    const reply = (port: number, flags: number) => dp.run('fromOverlay', frame({ src: pPod, dst: transitSeenByP }, tcp(443, port, flags)));
    const flagsOf = (port: number) => dp.maps.snat.lookup(tcpReplyKey(port))?.flags;

    it('records a FIN each way (3), a RST (4), and clears them on a new SYN of the same flow', () => {
      const port = flows.TCP!.portOf(open(40001).data);
      assert.equal(flagsOf(port), 0);
      forward(40001, FIN_ACK);
      assert.equal(flagsOf(port), 1, 'the forward FIN');
      reply(port, FIN_ACK);
      assert.equal(flagsOf(port), 3, 'and the reply FIN');
      assert.equal(flows.TCP!.portOf(open(40001).data), port, 'the client reusing its port keeps the mapping');
      assert.equal(flagsOf(port), 0, 'the SYN reopened it');
      reply(port, RST);
      assert.equal(flagsOf(port), 4, 'a RST');
    });

    // Every port taken by a flow; every 8th one's flow in state `closedFlags`, so whatever the random
    // start, 8 tries in a row meet exactly one of them.
    // closedNs: when they closed, on bpf_ktime_get_ns's clock (CLOCK_MONOTONIC, as process.hrtime); 0 is long ago.
    const takeEveryPort = (closedFlags: number, closedNs = 0n) => {
      const ports = Array.from({ length: 32768 }, (_, i) => 32768 + i);
      dp.maps.snat.updateBatch(
        ports.map((port) => [tcpReplyKey(port), { addr: '10.32.9.9', port: 9, flags: port % 8 === 0 ? closedFlags : 0, closedNs }]),
      );
    };

    for (const [what, flags] of [
      ['a FIN each way', 3],
      ['a RST', 4],
    ] as const) {
      it(`a new flow takes the port of a flow closed by ${what}, and its reply reaches it`, () => {
        takeEveryPort(flags);
        const out = open(40002);
        assert.equal(out.retval, TC_ACT_REDIRECT);
        const port = flows.TCP!.portOf(out.data);
        assert.equal(port % 8, 0, `port ${port} was a closed flow's`);
        assert.deepEqual(dp.maps.snat.lookup(tcpReplyKey(port)), { addr: qPod, port: 40002, flags: 0, closedNs: 0n });
        dp.expect(
          'fromOverlay',
          frame({ src: pPod, dst: transitSeenByP }, tcp(443, port, SYN_ACK)),
          TC_ACT_REDIRECT,
          frame({ src: reflected, dst: qPod }, tcp(443, 40002, SYN_ACK), macsToward(peerQ)),
        );
      });
    }

    it('a flow closed less than a second ago keeps its port: its last ACK may still be on the way', () => {
      takeEveryPort(3, process.hrtime.bigint());
      dp.expectDrop('fromOverlay', frame({ src: qPod, dst: reflected }, tcp(40002, 443, SYN)), DropReason.TransitState);
    });

    it('stamps the close with the kernel clock, and clears the stamp when the flow reopens', () => {
      const port = flows.TCP!.portOf(open(40001).data);
      const before = process.hrtime.bigint();
      forward(40001, FIN_ACK);
      reply(port, FIN_ACK);
      const closedNs = dp.maps.snat.lookup(tcpReplyKey(port))!.closedNs;
      assert.ok(closedNs >= before && closedNs <= process.hrtime.bigint(), `closed at ${closedNs}, between ${before} and now`);
      open(40001);
      assert.equal(dp.maps.snat.lookup(tcpReplyKey(port))!.closedNs, 0n);
    });

    it('a FIN one way only keeps the port: that flow may still send', () => {
      takeEveryPort(1);
      dp.expectDrop('fromOverlay', frame({ src: qPod, dst: reflected }, tcp(40002, 443, SYN)), DropReason.TransitState);
    });
  });

  it('with strait_snat made 16 entries (8 flows) at load, 100 flows all get a port: the LRU evicts the oldest', async () => {
    const small = (await Datapath.load((obj) => obj.setMaxEntries('strait_snat', 16))).program('gateway');
    try {
      const portOf = (sport: number) => {
        const forward = small.run('fromOverlay', frame({ src: qPod, dst: reflected }, flows.UDP!.forward(sport)));
        assert.equal(forward.retval, TC_ACT_REDIRECT, `flow from port ${sport}`);
        const entries = [...small.maps.snat.keys()].length;
        assert.ok(entries <= 16, `${entries} entries after the flow from port ${sport}`);
        return flows.UDP!.portOf(forward.data);
      };
      const first = portOf(20000);
      let last = first;
      for (let sport = 20001; sport < 20100; sport++) last = portOf(sport);
      assert.deepEqual(small.drops(), Array<number>(DROP_REASON_COUNT).fill(0));
      assert.equal(small.maps.snat.lookup(forwardKey(20000)), undefined, 'the oldest flow evicted');
      assert.notEqual(small.maps.snat.lookup(replyKey(first))?.port, 20000, "the oldest flow's reverse half evicted");
      small.expect(
        'fromOverlay',
        frame({ src: pPod, dst: transitSeenByP }, flows.UDP!.reply(last)),
        TC_ACT_REDIRECT,
        frame({ src: reflected, dst: qPod }, flows.UDP!.reply(20099), macsToward(peerQ)),
      );
    } finally {
      small.close();
    }
  });

  it('drops transit on a gateway that has no transit address', () => {
    dp.maps.config.update(0, { ...dp.maps.config.lookup(0)!, transitAddr: '0.0.0.0' });
    dp.expectDrop('fromOverlay', frame({ src: qPod, dst: reflected }, flows.UDP!.forward(40001)), DropReason.TransitState);
  });
});

/*
 * The same hub in both families, one table: L reflects P's pod to Q as an ExternalCIDR address; Q's pod
 * sends to it through L, which DNATs it to P's pod and SNATs it to its transit address. IPv4 runs in
 * strait_from_overlay, IPv6 in strait_transit6 (tail-called), on strait_snat and strait_snat6.
 */
interface Family {
  name: string;
  load: () => Promise<Datapath>;
  frame: (ip: { src: string; dst: string }, l4: L4, macs?: Macs) => Buffer;
  datagram: (ip: { src: string; dst: string }, l4: L4) => Buffer;
  qPod: string;
  pPod: string;
  reflected: string;
  transit: string;
  transitSeenByP: string;
  /** Where the L4 header starts in a frame. */
  l4At: number;
  echo: { request: 8 | 128; reply: 0 | 129; proto: number };
  snat: (dp: Datapath) => {
    lookup: (k: FlowKey) => SnatEntry | undefined;
    keys: () => Iterable<unknown>;
    update: (k: FlowKey, v: SnatEntry) => void;
  };
}
type FlowKey = { saddr: string; daddr: string; sport: number; dport: number; proto: number };
type SnatEntry = { addr: string; port: number; flags: number; closedNs: bigint };

const families: Family[] = [
  {
    name: 'IPv4',
    load: async () => (await Datapath.load()).program('gateway'),
    frame,
    datagram: (ip, l4) => datagram(ip, l4),
    qPod,
    pPod,
    reflected,
    transit: home.transit,
    transitSeenByP,
    l4At: 14 + 20,
    echo: { request: 8, reply: 0, proto: 1 },
    snat: (dp) => dp.maps.snat,
  },
  {
    name: 'IPv6',
    load: async () => programIpv6((await Datapath.load()).program('gateway')),
    frame: frame6,
    datagram: datagram6,
    qPod: 'fd10:32:0:1a::5',
    pPod: natMappings6[1]!.real,
    reflected: natMappings6[1]!.external,
    transit: home6.transit,
    transitSeenByP: translate6(home6.transit, peerP6.localNatExternal),
    l4At: 14 + 40,
    echo: { request: 128, reply: 129, proto: 58 },
    snat: (dp) => dp.maps.snat6,
  },
];

for (const fam of families) {
  describe(`datapath: hub transit, ${fam.name} (BPF_PROG_TEST_RUN)`, function () {
    requireRoot(this);
    let dp: Datapath;
    beforeEach(async () => {
      dp = await fam.load();
    });
    afterEach(() => dp?.close());

    const kinds: [string, { forward: (p: number) => L4; reply: (p: number) => L4; proto: number; dport: number; idAt: number }][] = [
      [
        'TCP',
        {
          forward: (p) => ({ kind: 'tcp', sport: p, dport: 443, payload: Buffer.from('hi') }),
          reply: (p) => ({ kind: 'tcp', sport: 443, dport: p, payload: Buffer.from('ho') }),
          proto: 6,
          dport: 443,
          idAt: 0,
        },
      ],
      [
        'UDP',
        {
          forward: (p) => ({ kind: 'udp', sport: p, dport: 53, payload: Buffer.from('q') }),
          reply: (p) => ({ kind: 'udp', sport: 53, dport: p, payload: Buffer.from('a') }),
          proto: 17,
          dport: 53,
          idAt: 0,
        },
      ],
      [
        'ICMP echo',
        {
          forward: (id) => ({ kind: 'icmp-echo', type: fam.echo.request, id }),
          reply: (id) => ({ kind: 'icmp-echo', type: fam.echo.reply, id }),
          proto: fam.echo.proto,
          dport: -1,
          idAt: 4,
        },
      ],
    ];
    for (const [what, k] of kinds) {
      it(`${what}: SNAT to the transit address toward P with both halves in the map, and the reply back to Q from the address Q sent to`, async () => {
        const portOf = (f: Buffer) => f.readUInt16BE(fam.l4At + k.idAt);
        const input = fam.frame({ src: fam.qPod, dst: fam.reflected }, k.forward(40001));
        const forward = dp.run('fromOverlay', input);
        assert.equal(forward.retval, TC_ACT_REDIRECT);
        const port = portOf(forward.data);
        assert.equal(port, 40001, 'its own port, free and in 32768..65535');
        dp.expect(
          'fromOverlay',
          input,
          TC_ACT_REDIRECT,
          fam.frame({ src: fam.transitSeenByP, dst: fam.pPod }, k.forward(port), macsToward(peerP)),
        );
        assert.deepEqual((await dp.tunnelOf('fromOverlay', input)).tunnel, { remote: peerP.endpoint, vni: peerP.vni, ttl: 64 });
        const dport = k.dport < 0 ? 40001 : k.dport;
        const snat = fam.snat(dp);
        assert.deepEqual(snat.lookup({ saddr: fam.qPod, daddr: fam.pPod, sport: 40001, dport, proto: k.proto }), {
          addr: fam.transit,
          port,
          flags: 0,
          closedNs: 0n,
        });
        const replyKey = { saddr: fam.pPod, daddr: fam.transit, sport: k.dport < 0 ? port : k.dport, dport: port, proto: k.proto };
        assert.deepEqual(snat.lookup(replyKey), { addr: fam.qPod, port: 40001, flags: 0, closedNs: 0n });
        assert.equal([...snat.keys()].length, 2);

        const reply = fam.frame({ src: fam.pPod, dst: fam.transitSeenByP }, k.reply(port), { dst: peerP.srcMac, src: peerP.dstMac });
        dp.expect(
          'fromOverlay',
          reply,
          TC_ACT_REDIRECT,
          fam.frame({ src: fam.reflected, dst: fam.qPod }, k.reply(40001), macsToward(peerQ)),
        );
        assert.deepEqual((await dp.tunnelOf('fromOverlay', reply)).tunnel, { remote: peerQ.endpoint, vni: peerQ.vni, ttl: 64 });
      });
    }

    it('a port another flow holds: the new flow gets another, and each reply finds its own flow', () => {
      const udp = kinds[1]![1];
      fam
        .snat(dp)
        .update(
          { saddr: fam.pPod, daddr: fam.transit, sport: 53, dport: 40002, proto: 17 },
          { addr: fam.qPod, port: 40009, flags: 0, closedNs: 0n },
        );
      const out = dp.run('fromOverlay', fam.frame({ src: fam.qPod, dst: fam.reflected }, udp.forward(40002)));
      const port = out.data.readUInt16BE(fam.l4At);
      assert.notEqual(port, 40002);
      assert.ok(port >= 32768 && port <= 65535, `port ${port}`);
      for (const [to, from] of [
        [port, 40002],
        [40002, 40009],
      ] as const)
        dp.expect(
          'fromOverlay',
          fam.frame({ src: fam.pPod, dst: fam.transitSeenByP }, udp.reply(to)),
          TC_ACT_REDIRECT,
          fam.frame({ src: fam.reflected, dst: fam.qPod }, udp.reply(from), macsToward(peerQ)),
        );
    });

    it('drops, counted as TransitState: an unknown reply, an ICMP error about an unknown flow, a protocol without ports', () => {
      const udp = kinds[1]![1];
      dp.expectDrop('fromOverlay', fam.frame({ src: fam.pPod, dst: fam.transitSeenByP }, udp.reply(33333)), DropReason.TransitState);
      const error: L4 = {
        kind: 'icmp-error',
        type: fam.name === 'IPv4' ? 3 : 1,
        code: fam.name === 'IPv4' ? 3 : 4,
        quote: fam.datagram({ src: fam.transitSeenByP, dst: fam.pPod }, udp.forward(33333)),
      };
      dp.expectDrop('fromOverlay', fam.frame({ src: fam.pPod, dst: fam.transitSeenByP }, error), DropReason.TransitState);
      dp.expectDrop(
        'fromOverlay',
        fam.frame({ src: fam.qPod, dst: fam.reflected }, { kind: 'raw', proto: 47, payload: Buffer.alloc(8) }),
        DropReason.TransitState,
      );
      assert.deepEqual([...fam.snat(dp).keys()], [], 'nothing written');
    });

    const errorCases: [string, 'TCP' | 'UDP', string, number | undefined][] = [
      ['from the endpoint, quoting a whole UDP datagram', 'UDP', fam.pPod, undefined],
      [
        'from a router in P, quoting a TCP header with its checksum',
        'TCP',
        fam.name === 'IPv4' ? '172.16.0.1' : 'fd17:16:0:1::1',
        undefined,
      ],
      ["from a router in P, quoting a TCP header's first 8 bytes", 'TCP', fam.name === 'IPv4' ? '172.16.0.1' : 'fd17:16:0:1::1', 8],
    ];
    for (const [what, kind, from, cut] of errorCases) {
      it(`an ICMP error about a transit flow ${what}: Q sees it from the address it sent to, about what it sent`, () => {
        const k = kinds.find(([n]) => n === kind)![1];
        dp.run('fromOverlay', fam.frame({ src: fam.qPod, dst: fam.reflected }, k.forward(40001)));
        const l3 = fam.l4At - 14;
        const quoted = (q: Buffer) => (cut === undefined ? q : q.subarray(0, l3 + cut));
        const error = (q: Buffer): L4 => ({
          kind: 'icmp-error',
          type: fam.name === 'IPv4' ? 3 : 1,
          code: fam.name === 'IPv4' ? 3 : 4,
          quote: quoted(q),
        });
        dp.expect(
          'fromOverlay',
          fam.frame(
            { src: from, dst: fam.transitSeenByP },
            error(fam.datagram({ src: fam.transitSeenByP, dst: fam.pPod }, k.forward(40001))),
          ),
          TC_ACT_REDIRECT,
          fam.frame(
            { src: fam.reflected, dst: fam.qPod },
            error(fam.datagram({ src: fam.qPod, dst: fam.reflected }, k.forward(40001))),
            macsToward(peerQ),
          ),
        );
      });
    }
  });
}

describe('datapath: IPv6 hub transit only (BPF_PROG_TEST_RUN)', function () {
  requireRoot(this);
  const v6 = families[1]!;
  let dp: Datapath;
  beforeEach(async () => {
    dp = await v6.load();
  });
  afterEach(() => dp?.close());

  it("a packet from P larger than our tunnel to Q: Packet Too Big (MTU 1450) back to its sender through P's tunnel, no state taken", async () => {
    const big: L4 = { kind: 'udp', sport: 53, dport: 40001, payload: Buffer.alloc(1500 - 40 - 8) };
    // Q's pod reflected to P: P's pod sends to it, P → L → Q.
    dp.maps.natmap6.update('fd00:e:0:5f9::9', v6.qPod);
    dp.maps.natmap6Rev.update(v6.qPod, 'fd00:e:0:5f9::9');
    const toQ = v6.frame({ src: v6.pPod, dst: translate6('fd00:e:0:5f9::9', peerP6.localNatExternal) }, big, {
      dst: peerP.srcMac,
      src: peerP.dstMac,
    });
    const r = dp.run('fromOverlay', toQ);
    assert.equal(r.retval, TC_ACT_REDIRECT);
    const ip = toQ.subarray(14);
    const icmp = r.data.subarray(14 + 40);
    assert.equal(r.data.readUInt16BE(12), 0x86dd);
    assert.equal(icmp[0], 2, 'Packet Too Big');
    assert.equal(icmp.readUInt32BE(4), home.tunnelMtu);
    assert.equal(
      r.data.subarray(14 + 8, 14 + 24).toString('hex'),
      ip.subarray(24, 40).toString('hex'),
      'from the destination it could not reach',
    );
    assert.equal(r.data.subarray(14 + 24, 14 + 40).toString('hex'), ip.subarray(8, 24).toString('hex'), 'to its sender');
    assert.equal(icmp.subarray(8).toString('hex'), ip.subarray(0, 40 + 8).toString('hex'), 'quoting its header and ports');
    assert.deepEqual(checksumProblems(r.data), []);
    assert.deepEqual((await dp.tunnelOf('fromOverlay', toQ)).tunnel, { remote: peerP.endpoint, vni: peerP.vni, ttl: 64 });
    assert.deepEqual([...dp.maps.snat6.keys()], []);
  });

  it("a reflected source needs no state: P's pod, reflected to Q, reaches Q's pod with its ExternalCIDR address", () => {
    dp.maps.natmap6.update('fd00:e:0:5f9::9', v6.qPod);
    dp.maps.natmap6Rev.update(v6.qPod, 'fd00:e:0:5f9::9');
    const udp: L4 = { kind: 'udp', sport: 5353, dport: 53, payload: Buffer.from('x') };
    dp.expect(
      'fromOverlay',
      v6.frame({ src: v6.pPod, dst: translate6('fd00:e:0:5f9::9', peerP6.localNatExternal) }, udp, {
        dst: peerP.srcMac,
        src: peerP.dstMac,
      }),
      TC_ACT_REDIRECT,
      v6.frame({ src: v6.reflected, dst: v6.qPod }, udp, macsToward(peerQ)),
    );
    assert.deepEqual([...dp.maps.snat6.keys()], []);
  });

  it('a zero UDP checksum (invalid in IPv6 but for tunnels, RFC 6935) stays zero through the SNAT: the receiver decides', () => {
    const zero = (sport: number, dport: number): L4 => ({ kind: 'udp', sport, dport, payload: Buffer.from('q'), zeroChecksum: true });
    const out = dp.run('fromOverlay', v6.frame({ src: v6.qPod, dst: v6.reflected }, zero(1234, 53)));
    assert.equal(out.retval, TC_ACT_REDIRECT);
    const port = out.data.readUInt16BE(v6.l4At);
    assert.ok(port >= 32768, `port ${port}`);
    assert.equal(
      out.data.toString('hex'),
      v6.frame({ src: v6.transitSeenByP, dst: v6.pPod }, zero(port, 53), macsToward(peerP)).toString('hex'),
    );
  });

  it('with its program gone from strait_progs, transit is dropped as Transit6 (and nothing else changes)', () => {
    assert.equal(dp.obj.map(layout.maps.progs.name, u32, u32).delete(0), true);
    dp.expectDrop(
      'fromOverlay',
      v6.frame({ src: v6.qPod, dst: v6.reflected }, { kind: 'udp', sport: 40001, dport: 53 }),
      DropReason.Transit6,
    );
    dp.expectDrop(
      'fromOverlay',
      v6.frame({ src: v6.pPod, dst: v6.transitSeenByP }, { kind: 'udp', sport: 53, dport: 40001 }),
      DropReason.Transit6,
    );
  });

  it('drops transit on a gateway without an IPv6 transit address', () => {
    dp.maps.config6.update(0, { ...dp.maps.config6.lookup(0)!, transitAddr: '::' });
    dp.expectDrop(
      'fromOverlay',
      v6.frame({ src: v6.qPod, dst: v6.reflected }, { kind: 'udp', sport: 40001, dport: 53 }),
      DropReason.TransitState,
    );
  });
});

/**
 * The probe responder on real packets: a node's datapath loaded by NodeDatapath in one namespace, a
 * prober in another, joined by a veth pair. Nothing in the node's namespace listens on the liveness
 * port, so every reply is the datapath's.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import * as layout from '../../src/dataplane/ebpf/layout';
import { NodeDatapath, cleanupNode } from '../../src/dataplane/ebpf/node-datapath';
import { LivenessResponder } from '../../src/dataplane/ebpf/liveness-responder';
import { findAttachments } from '../../src/dataplane/ebpf/attachments';
import { ip } from '../../src/kernel/command';
import { createNetns, deleteNetns, netnsPath } from '../../src/kernel/netns';
import { type Datagram, native } from '../../src/native/binding';
import { BpfObject, ensureBpffs } from '../../src/native';
import { Prober } from '../../src/liveness/prober';
import type { Verdict } from '../../src/liveness/detection';
import { ProbeState, livenessPort, probeRequest, readProbeReply } from '../../src/liveness/wire';

/** TC verdicts (linux/pkt_cls.h): the responder's own, and "not mine, the next program's". */
const TC_ACT_REDIRECT = 7;
/** -1, as BPF_PROG_TEST_RUN reports a return value: unsigned. */
const TC_ACT_UNSPEC = 0xffffffff;
import { specWith, nodeSpecDocument } from '../support/node-specs';
import { ping, requireRoot, tempPinDir, uniqueName } from '../support/kernel';
import { checksumProblems, frame6, macsOf, parseIpv6 } from '../support/packet';
import { waitFor } from '../support/wait';

const nodeAddress = '10.213.0.2';
const proberAddress = '10.213.0.1';
/** Node n1 of the shared fixture, its underlay address on the veth toward the prober. */
const spec = specWith(nodeSpecDocument(), (d) => {
  d.node.underlayAddress = nodeAddress;
});
/** The same on an IPv6 underlay. */
const nodeAddress6 = 'fd00:213::2';
const spec6 = specWith(nodeSpecDocument(), (d) => {
  d.node.underlayAddress = nodeAddress6;
});

/** One request from a socket in `netns` to `address`, and the datagrams back within `ms`. */
async function askOnce(netns: string, address: string, ms = 300): Promise<Datagram[]> {
  const got: Datagram[] = [];
  const socket = native().udpSocketOpen(netnsPath(netns), (d) => got.push(...d));
  try {
    native().udpSocketSend(socket, address, livenessPort, probeRequest(0xabcdef01, 7));
    await new Promise((r) => setTimeout(r, ms));
    return got;
  } finally {
    native().udpSocketClose(socket);
  }
}

for (const attachMode of ['tcx', 'clsact'] as const) {
  describe(`liveness responder (real kernel, ${attachMode})`, function () {
    requireRoot(this);
    let node: string;
    let prober: string;
    let options: { pinRoot: string; netns: string; podInterfaces: RegExp; attachMode: typeof attachMode };
    let probers: Prober[];
    beforeEach(() => {
      ensureBpffs();
      node = uniqueName('strait-test-node');
      prober = uniqueName('strait-test-prober');
      probers = [];
      options = { pinRoot: join('/sys/fs/bpf', uniqueName('strait-test')), netns: netnsPath(node), podInterfaces: /^pod-/, attachMode };
      createNetns(node);
      createNetns(prober);
      ip(['link', 'add', 'uplink', 'type', 'veth', 'peer', 'name', 'uplink', 'netns', prober], node);
      ip(['addr', 'add', `${nodeAddress}/24`, 'dev', 'uplink'], node);
      ip(['addr', 'add', `${proberAddress}/24`, 'dev', 'uplink'], prober);
      ip(['-6', 'addr', 'add', `${nodeAddress6}/64`, 'dev', 'uplink', 'nodad'], node);
      ip(['-6', 'addr', 'add', 'fd00:213::1/64', 'dev', 'uplink', 'nodad'], prober);
      for (const ns of [node, prober]) {
        ip(['link', 'set', 'uplink', 'up'], ns);
        ip(['link', 'set', 'lo', 'up'], ns);
      }
    });
    afterEach(() => {
      for (const p of probers) p.close();
      try {
        cleanupNode(options);
      } finally {
        deleteNetns(node);
        deleteNetns(prober);
      }
    });

    const startProber = (verdicts: Verdict[], target = nodeAddress) => {
      const p = new Prober({ netns: netnsPath(prober), intervalMs: 20, multiplier: 3, onChange: (v) => verdicts.push(v.get('n1')!) });
      probers.push(p);
      p.setTargets(new Map([['n1', target]]));
      p.start();
      return p;
    };

    it('answers on the underlay device with the state and generation the agent wrote, also once the agent is gone', async () => {
      const datapath = await NodeDatapath.load(options);
      let generation: number;
      try {
        const applied = datapath.apply(spec);
        assert.ok(
          applied.attachments.some((a) => a.interface === 'uplink' && a.program === layout.Program.Liveness && a.change === 'attached'),
          JSON.stringify(applied.attachments),
        );
        const written = datapath.maps.liveness.lookup(layout.CONFIG_KEY)!;
        assert.deepEqual(written.addrs, [nodeAddress, '0.0.0.0']);
        assert.equal(written.port, livenessPort);
        assert.equal(written.state, ProbeState.Ready);
        generation = written.generation;
        assert.ok(generation > 0);
      } finally {
        // The agent exits: its fds close, the pinned programs stay attached.
        datapath.close();
      }
      const replies = (await askOnce(prober, nodeAddress)).map((d) => ({ from: `${d.address}:${d.port}`, reply: readProbeReply(d.data) }));
      assert.deepEqual(replies, [
        { from: `${nodeAddress}:${livenessPort}`, reply: { session: 0xabcdef01, seq: 7, state: ProbeState.Ready, generation } },
      ]);
      // Other traffic to and through the device goes on as before (the responder passes it to the next program or the stack).
      assert.deepEqual(ping(prober, nodeAddress, 2), { transmitted: 2, received: 2 });
    });

    it('answers on an IPv6 underlay address as on an IPv4 one, and a prober of both families sees the node up', async () => {
      const datapath = await NodeDatapath.load(options);
      try {
        datapath.apply(spec6);
        const written = datapath.maps.liveness.lookup(layout.CONFIG_KEY)!;
        assert.deepEqual(
          [written.addrs, written.addrs6],
          [
            ['0.0.0.0', '0.0.0.0'],
            [nodeAddress6, '::'],
          ],
        );
      } finally {
        datapath.close();
      }
      const [reply] = await askOnce(prober, nodeAddress6);
      assert.equal(`${reply?.address}:${reply?.port}`, `${nodeAddress6}:${livenessPort}`);
      assert.equal(readProbeReply(reply!.data)?.state, ProbeState.Ready);
      assert.deepEqual(await askOnce(prober, nodeAddress), [], 'no IPv4 address is answered on now');
      const verdicts: Verdict[] = [];
      const p = startProber(verdicts, nodeAddress6);
      await waitFor('the node answers over IPv6', () => p.verdicts().get('n1') === 'up', 2000, undefined, 10);
    });

    it("the kernel fallback's responder alone (no datapath maps programmed) answers the same, until the node is cleaned up", async () => {
      const responder = await LivenessResponder.load(options);
      try {
        responder.apply(spec);
        responder.apply(spec);
        assert.deepEqual(
          findAttachments(options.pinRoot, options.netns).map((a) => `${a.interface}:${a.program}`),
          [`uplink:${layout.Program.Liveness}`],
        );
      } finally {
        responder.close();
      }
      const [reply] = (await askOnce(prober, nodeAddress)).map((d) => readProbeReply(d.data));
      assert.equal(reply?.state, ProbeState.Ready);
      cleanupNode(options);
      assert.deepEqual(await askOnce(prober, nodeAddress), []);
    });

    it("a restarted fallback agent keeps its predecessor's responder answering and swaps its own in: a prober sees no gap", async () => {
      const first = await LivenessResponder.load(options);
      first.apply(spec);
      first.close();
      const verdicts: Verdict[] = [];
      const p = startProber(verdicts);
      await waitFor('the node answers', () => p.verdicts().get('n1') === 'up', 2000, undefined, 10);
      // What openDataplane does for the fallback: take off what an eBPF datapath left, but the responder.
      assert.deepEqual(cleanupNode(options, 'responder').detached, []);
      const second = await LivenessResponder.load(options);
      try {
        second.apply(spec);
      } finally {
        second.close();
      }
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(verdicts, ['up'], 'never down across the restart');
      const [attached] = findAttachments(options.pinRoot, options.netns);
      assert.equal(attached?.program, layout.Program.Liveness);
      assert.deepEqual(cleanupNode(options).detached.length, 1);
    });

    it('answers only probes to its own addresses; other datagrams on the port are not turned around', async () => {
      const datapath = await NodeDatapath.load(options);
      try {
        datapath.apply(spec);
      } finally {
        datapath.close();
      }
      ip(['addr', 'add', '10.213.0.3/24', 'dev', 'uplink'], node);
      assert.deepEqual(await askOnce(prober, '10.213.0.3'), [], 'an address of the node that probes do not go to');
      // A datagram on the port that is not a request (a reply, as a reflection would send) gets no answer either.
      const got: Datagram[] = [];
      const socket = native().udpSocketOpen(netnsPath(prober), (d) => got.push(...d));
      try {
        const reply = probeRequest(1, 1);
        reply[5] = 2; // type: reply
        native().udpSocketSend(socket, nodeAddress, livenessPort, reply);
        native().udpSocketSend(socket, nodeAddress, livenessPort, Buffer.from('not a probe, long enough to hold one'));
        await new Promise((r) => setTimeout(r, 200));
      } finally {
        native().udpSocketClose(socket);
      }
      assert.deepEqual(got, []);
    });

    it('an event loop held up for longer than the detection time does not make an answering node look down', async () => {
      const datapath = await NodeDatapath.load(options);
      const verdicts: Verdict[] = [];
      try {
        datapath.apply(spec);
      } finally {
        datapath.close();
      }
      const p = startProber(verdicts);
      await waitFor('the node answers', () => p.verdicts().get('n1') === 'up', 2000, undefined, 10);
      // As a long apply or a garbage collection would: 300 ms (five detection times) without a turn of the loop.
      for (let i = 0; i < 3; i++) {
        const until = Date.now() + 300;
        while (Date.now() < until);
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.deepEqual(verdicts, ['up'], 'the replies that came meanwhile are read before judging');
    });

    it('a prober sees the node up, then down within a few detection times once the programs are gone, and when the maps say not ready', async () => {
      const datapath = await NodeDatapath.load(options);
      const verdicts: Verdict[] = [];
      try {
        datapath.apply(spec);
        const p = startProber(verdicts);
        await waitFor('the node answers', () => p.verdicts().get('n1') === 'up', 2000, undefined, 10);
        // The agent says the node does not forward: replies come, saying so, and count as none.
        const value = datapath.maps.liveness.lookup(layout.CONFIG_KEY)!;
        datapath.maps.liveness.update(layout.CONFIG_KEY, { ...value, state: ProbeState.Down });
        await waitFor('a not-ready node is down', () => p.verdicts().get('n1') === 'down', 2000, undefined, 10);
        datapath.maps.liveness.update(layout.CONFIG_KEY, value);
        await waitFor('ready again: up after answering for a detection time', () => p.verdicts().get('n1') === 'up', 2000, undefined, 10);
      } finally {
        datapath.close();
      }
      // The node's programs are taken off (a node gone, or `strait agent --cleanup`).
      cleanupNode(options);
      await waitFor('no programs: down', () => probers[0]!.verdicts().get('n1') === 'down', 2000, undefined, 10);
      assert.deepEqual(verdicts, ['up', 'down', 'up', 'down']);
    });
  });
}

describe('liveness responder over IPv6 (BPF_PROG_TEST_RUN): the reply keeps a valid UDP checksum', function () {
  requireRoot(this);
  let pins: { dir: string; cleanup: () => void };
  let obj: BpfObject;
  before(async () => {
    pins = tempPinDir();
    obj = await BpfObject.load(layout.datapathObjectPath, { pinRoot: pins.dir });
    obj.map(layout.maps.liveness.name, layout.maps.liveness.key, layout.maps.liveness.value).update(layout.CONFIG_KEY, {
      addrs: ['0.0.0.0', '0.0.0.0'],
      addrs6: [nodeAddress6, '::'],
      generation: 77,
      port: livenessPort,
      state: ProbeState.Ready,
    });
  });
  after(() => {
    obj?.close();
    pins?.cleanup();
  });

  it('swaps addresses, ports and MACs, writes the reply, and updates the checksum a wire sender computed (RFC 1624)', () => {
    const macs = { dst: '02:00:00:00:00:02', src: '02:00:00:00:00:01' };
    for (const [session, seq] of [
      [0xabcdef01, 7],
      [0, 0],
      [0xffffffff, 0xfffffffe],
    ] as const) {
      const request = frame6(
        { src: 'fd00:213::1', dst: nodeAddress6 },
        { kind: 'udp', sport: 40000, dport: livenessPort, payload: probeRequest(session, seq) },
        macs,
      );
      const { retval, data } = obj.program(layout.Program.Liveness).testRun(request);
      assert.equal(retval, TC_ACT_REDIRECT);
      assert.deepEqual(checksumProblems(data), [], `session ${session}`);
      const ip6 = parseIpv6(data)!;
      assert.deepEqual([ip6.src, ip6.dst, macsOf(data)], [nodeAddress6, 'fd00:213::1', { dst: macs.src, src: macs.dst }]);
      assert.deepEqual(readProbeReply(data.subarray(data.length - probeRequest(0, 0).length)), {
        session,
        seq,
        state: ProbeState.Ready,
        generation: 77,
      });
    }
  });

  it('passes a datagram to another of its addresses, or to another port, on', () => {
    for (const [dst, dport] of [
      ['fd00:213::3', livenessPort],
      [nodeAddress6, livenessPort + 1],
    ] as const) {
      const other = frame6({ src: 'fd00:213::1', dst }, { kind: 'udp', sport: 40000, dport, payload: probeRequest(1, 1) });
      const { retval, data } = obj.program(layout.Program.Liveness).testRun(other);
      assert.equal(retval, TC_ACT_UNSPEC);
      assert.deepEqual(data, other);
    }
  });
});

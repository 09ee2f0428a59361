import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ensureBpffs } from '../../../src/native';
import { NodeDatapath, cleanupNode } from '../../../src/dataplane/ebpf/node-datapath';
import { ip } from '../../../src/kernel/command';
import { createNetns, deleteNetns, netnsPath } from '../../../src/kernel/netns';
import type { NodeDataplaneSpec } from '../../../src/nodespec/spec';
import { requireRoot, uniqueName } from '../../support/kernel';
import { dualStackHubSpecDocument, hubSpecWith, specWith } from '../../support/node-specs';

type Doc = Parameters<Parameters<typeof hubSpecWith>[0]>[0];

/**
 * B's worker, its underlay address 192.0.2.11 on its `uplink`; peer A's pods are 10.1.0.0/16 in B's view
 * (fd00:a::/56 dual-stack).
 */
const asWorker = (d: Doc, dualStack: boolean) => {
  const v6 = (prefix: string) => (dualStack ? [prefix] : []);
  d.node = { name: 'b-worker', role: 'worker', underlayAddress: '192.0.2.11' };
  d.activeGateway = { name: 'b-gw', underlayAddress: '192.0.2.12' };
  d.nodes = [
    { name: 'b-worker', underlayAddress: '192.0.2.11', podCIDRs: ['10.0.0.0/24', ...v6('fd00:b::/64')] },
    { name: 'b-gw', underlayAddress: '192.0.2.12', podCIDRs: ['10.0.1.0/24', ...v6('fd00:b:0:1::/64')] },
  ];
};
const workerSpec = () => hubSpecWith((d) => asWorker(d, false));
const dualStackWorkerSpec = () => specWith(dualStackHubSpecDocument(), (d) => asWorker(d, true));

/** Sends DF datagrams of `size` bytes of payload to `dst` until the kernel refuses one: prints errno and the path MTU it learnt. */
const udpUntilRefused = (dst: string, size: number) => `
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, 10, 2)  # IP_MTU_DISCOVER = IP_PMTUDISC_DO
s.connect(("${dst}", 9))
for i in range(50):
    try:
        s.send(b"x" * ${size})
    except OSError as e:
        print(e.errno, s.getsockopt(socket.IPPROTO_IP, 14))  # IP_MTU
        break
    time.sleep(0.05)
else:
    print("never refused")
`;

/** A node with one pod (10.0.0.5, fd00:b::5), its datapath programmed with `spec`. */
async function startWorker(underlay: number, spec: NodeDataplaneSpec) {
  ensureBpffs();
  const node = uniqueName('strait-test-node');
  const pod = uniqueName('strait-test-pod');
  const pinRoot = join('/sys/fs/bpf', uniqueName('strait-test'));
  createNetns(node);
  createNetns(pod);
  let datapath: NodeDatapath | undefined;
  const stop = () => {
    try {
      datapath?.close();
      cleanupNode({ pinRoot, netns: netnsPath(node) });
    } finally {
      deleteNetns(node);
      deleteNetns(pod);
    }
  };
  try {
    ip(['link', 'add', 'uplink', 'mtu', String(underlay), 'type', 'veth', 'peer', 'name', 'uplink-peer', 'mtu', String(underlay)], node);
    ip(['addr', 'add', '192.0.2.11/24', 'dev', 'uplink'], node);
    ip(
      ['link', 'add', 'pod-a', 'mtu', String(underlay), 'type', 'veth', 'peer', 'name', 'eth0', 'mtu', String(underlay), 'netns', pod],
      node,
    );
    for (const dev of ['uplink', 'uplink-peer', 'pod-a', 'lo']) ip(['link', 'set', dev, 'up'], node);
    const podSideMac = (JSON.parse(ip(['-j', 'link', 'show', 'pod-a'], node)) as { address: string }[])[0]!.address;
    ip(['addr', 'add', '10.0.0.5/24', 'dev', 'eth0'], pod);
    ip(['-6', 'addr', 'add', 'fd00:b::5/64', 'dev', 'eth0', 'nodad'], pod);
    for (const dev of ['eth0', 'lo']) ip(['link', 'set', dev, 'up'], pod);
    ip(['route', 'add', 'default', 'via', '10.0.0.1', 'dev', 'eth0', 'onlink'], pod);
    ip(['neigh', 'add', '10.0.0.1', 'lladdr', podSideMac, 'dev', 'eth0', 'nud', 'permanent'], pod);
    ip(['-6', 'route', 'add', 'default', 'via', 'fd00:b::1', 'dev', 'eth0', 'onlink'], pod);
    ip(['-6', 'neigh', 'add', 'fd00:b::1', 'lladdr', podSideMac, 'dev', 'eth0', 'nud', 'permanent'], pod);
    datapath = await NodeDatapath.load({ pinRoot, netns: netnsPath(node), podInterfaces: /^pod-/ });
    datapath.apply(spec);
    return { node, pod, datapath, stop };
  } catch (err) {
    stop();
    throw err;
  }
}
type Worker = Awaited<ReturnType<typeof startWorker>>;

describe('path MTU toward a peer: a pod learns the tunnel MTU from the eBPF datapath (real kernel)', function () {
  requireRoot(this);
  for (const { underlay, tunnel } of [
    { underlay: 1500, tunnel: 1450 },
    { underlay: 9000, tunnel: 8950 },
  ]) {
    describe(`underlay MTU ${underlay}, pods MTU ${underlay}`, () => {
      let node: string;
      let pod: string;
      let datapath: NodeDatapath;
      let worker: Worker;
      before(async () => {
        worker = await startWorker(underlay, workerSpec());
        ({ node, pod, datapath } = worker);
      });
      after(() => worker?.stop());

      it(`derives the tunnel MTU ${tunnel} from the underlay device: in the config and on the VXLAN device`, () => {
        assert.equal(datapath.maps.config.lookup(0)!.tunnelMtu, tunnel);
        assert.equal((JSON.parse(ip(['-j', 'link', 'show', 'strait0'], node)) as { mtu: number }[])[0]!.mtu, tunnel);
      });

      it(`answers ping -M do -s ${underlay - 28} with "Frag needed" and mtu = ${tunnel}, after which the pod knows the path MTU`, () => {
        const r = spawnSync(
          'ip',
          ['netns', 'exec', pod, 'ping', '-n', '-c', '2', '-i', '0.2', '-W', '1', '-M', 'do', '-s', String(underlay - 28), '10.1.4.5'],
          { encoding: 'utf8' },
        );
        const out = r.stdout + r.stderr;
        assert.match(out, new RegExp(`From 192\\.0\\.2\\.11 icmp_seq=1 Frag needed and DF set \\(mtu = ${tunnel}\\)`), out);
        const learnt = ip(['route', 'get', '10.1.4.5'], pod);
        assert.match(learnt, new RegExp(`mtu ${tunnel}`), learnt);
      });

      it(`refuses a DF UDP datagram of ${underlay - 28} bytes with EMSGSIZE once the frag-needed came back`, () => {
        const r = spawnSync('ip', ['netns', 'exec', pod, 'python3', '-c', udpUntilRefused('10.1.4.6', underlay - 28)], {
          encoding: 'utf8',
        });
        assert.equal(r.stdout.trim(), `90 ${tunnel}`, r.stderr); // 90: EMSGSIZE
      });

      it(`lets ping -M do -s ${tunnel - 28} through (it fits the tunnel: no error comes back)`, () => {
        const r = spawnSync(
          'ip',
          ['netns', 'exec', pod, 'ping', '-n', '-c', '1', '-W', '1', '-M', 'do', '-s', String(tunnel - 28), '10.1.4.7'],
          { encoding: 'utf8' },
        );
        // Nothing answers on the other side of the tunnel: no reply, and no error either.
        assert.doesNotMatch(r.stdout + r.stderr, /Frag needed|too long/, r.stdout + r.stderr);
        assert.match(r.stdout, /1 packets transmitted, 0 received/, r.stdout);
      });
    });
  }

  describe('IPv6 (dual-stack), underlay MTU 1500', () => {
    let worker: Worker;
    before(async () => {
      worker = await startWorker(1500, dualStackWorkerSpec());
    });
    after(() => worker?.stop());

    it('answers ping -6 -M do -s 1452 with Packet Too Big, mtu = 1450, after which the pod knows the path MTU', () => {
      const r = spawnSync(
        'ip',
        ['netns', 'exec', worker.pod, 'ping', '-6', '-n', '-c', '2', '-i', '0.2', '-W', '1', '-M', 'do', '-s', '1452', 'fd00:a::45'],
        { encoding: 'utf8' },
      );
      const out = r.stdout + r.stderr;
      // The real stack checked the checksum and matched the quote to the socket; the error comes from the destination.
      assert.match(out, /From fd00:a::45 icmp_seq=1 Packet too big: mtu=1450/, out);
      const learnt = ip(['-6', 'route', 'get', 'fd00:a::45'], worker.pod);
      assert.match(learnt, /mtu 1450/, learnt);
    });

    it('lets ping -6 -M do -s 1402 through (1450 bytes: it fits the tunnel)', () => {
      const r = spawnSync(
        'ip',
        ['netns', 'exec', worker.pod, 'ping', '-6', '-n', '-c', '1', '-W', '1', '-M', 'do', '-s', '1402', 'fd00:a::46'],
        {
          encoding: 'utf8',
        },
      );
      assert.doesNotMatch(r.stdout + r.stderr, /too big|too long/, r.stdout + r.stderr);
      assert.match(r.stdout, /1 packets transmitted, 0 received/, r.stdout);
    });
  });
});

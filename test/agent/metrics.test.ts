/**
 * `strait agent`'s metrics and health server (docs/metrics.md): a real process on a netns node, scraped
 * over HTTP while real packets go through the node's datapath.
 */
import { fileModeArgs, spawnAgent } from '../support/agent-process';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ip } from '../../src/kernel/command';
import { cliJson } from '../network-ipam/cli-runner';
import { nextReconcile } from '../support/heartbeat';
import { requireRoot } from '../support/kernel';
import { freePort, get, metricNames, scrape, series } from '../support/metrics';
import { Proto, datagram, datagram6, ipv4Header } from '../support/packet';
import { waitFor } from '../support/wait';
import { sendDatagram } from '../support/wire';
import { createAgentNode, removeAgentNode } from './agent-node';
import { nodeSpecDocument, peerB, peerC, specFileText, withIpv6 } from '../support/node-specs';
import { type InspectReport, counterFamilies } from '../../src/dataplane/ebpf/inspect';
import type { WholeNodeDataplaneSpecDocument } from '../../src/api/node-dataplane';

const podAddress = '10.0.0.5';
/** In n1's IPv6 pod prefix (withIpv6: fd00:10::/64). */
const podAddress6 = 'fd00:10::5';

describe('strait agent: metrics and health (real process, real kernel)', function () {
  requireRoot(this);
  let node: string;
  let pod: string;
  let pinRoot: string;
  let dir: string;
  let child: ChildProcess | undefined;
  let stderr: string;
  let port: number;

  beforeEach(async () => {
    ({ node, pod, pinRoot, dir } = createAgentNode('strait-agent-metrics-'));
    mkdirSync(join(dir, 'nodes'));
    stderr = '';
    child = undefined;
    port = await freePort();
  });
  afterEach(() => removeAgentNode({ node, pod, pinRoot, dir }, child));

  const specPath = () => join(dir, 'nodes', 'n1.json');
  const statusPath = () => join(dir, 'status', 'n1.json');
  const writeSpec = (doc: WholeNodeDataplaneSpecDocument = nodeSpecDocument()) => {
    writeFileSync(join(dir, 'nodes', '.n1.json.tmp'), specFileText(doc));
    renameSync(join(dir, 'nodes', '.n1.json.tmp'), specPath());
  };
  const logOf = () => `agent log:\n${stderr}`;

  /** Starts the agent on the spec file with its server on `port`; resolves with its exit code. */
  const startAgent = (...extra: string[]): Promise<number | null> => {
    const files = { spec: specPath(), status: statusPath(), pinRoot, netns: node };
    const started = spawnAgent(
      [...fileModeArgs(files), '--interval', '0.2', '--metrics-address', '127.0.0.1', '--metrics-port', String(port), ...extra],
      (text) => (stderr += text),
    );
    child = started.child;
    return started.exited;
  };
  const readyz = () => get(port, '/readyz');
  /** The agent's own series (the process_ and nodejs_ defaults left out), each as "labels value". */
  const agentSeries = async (name: string) => series(await scrape(port), name);

  it('answers /readyz 503 until a spec is applied and 200 after, /healthz 200 throughout, and closes on SIGTERM', async () => {
    const exited = startAgent();
    await waitFor('/healthz', async () => (await get(port, '/healthz')).status === 200, 15_000, logOf);
    await waitFor('the datapath loaded', async () => !(await readyz()).body.includes('starting'), 15_000, logOf);
    assert.deepEqual(await readyz(), { status: 503, body: 'not ready: no spec applied yet\n' });
    const before = await scrape(port);
    assert.deepEqual(series(before, 'strait_agent_ready'), ['0']);
    assert.deepEqual(series(before, 'strait_agent_dataplane'), ['dataplane=ebpf 1']);
    assert.deepEqual(series(before, 'strait_agent_spec_generation'), ['0']);
    assert.deepEqual(series(before, 'strait_agent_nat_mappings'), ['0']);
    assert.deepEqual(series(before, 'strait_agent_applied_spec_info'), [], 'no spec in force, none named');
    assert.deepEqual(series(before, 'strait_agent_peer_packets_total'), [], 'no spec, no peer to name');

    writeSpec(nodeSpecDocument([peerB, peerC]));
    await waitFor('/readyz 200', async () => (await readyz()).status === 200, 10_000, logOf);
    assert.deepEqual(await readyz(), { status: 200, body: 'ready\n' });
    assert.deepEqual(await get(port, '/healthz'), { status: 200, body: 'ok\n' });
    const after = await scrape(port);
    assert.deepEqual(series(after, 'strait_agent_ready'), ['1']);
    assert.deepEqual(series(after, 'strait_agent_spec_generation'), ['1']);
    // The sha256sum of the canonical text of nodeSpecDocument([peerB, peerC]).
    assert.deepEqual(series(after, 'strait_agent_applied_spec_info'), ['spec=e63607a547eab0ef 1']);
    assert.deepEqual(series(after, 'strait_agent_nat_mappings'), ['1']);
    assert.deepEqual(series(after, 'strait_agent_reconcile_errors_total'), ['0']);

    child!.kill('SIGTERM');
    assert.equal(await Promise.race([exited, sleep(10_000).then(() => 'still running 10 s after SIGTERM')]), 0, logOf());
    await assert.rejects(get(port, '/healthz'), 'the server closed with the agent');
  });

  it('counts per peer and family exactly the packets and bytes `strait inspect` reads from the node, and the drops per reason', async () => {
    // The pod sends through its veth to the node, whose p-x runs strait_from_pod: a static neighbour for
    // a next hop stands in for the node answering ARP and NDP.
    ip(['link', 'set', 'p-x', 'up'], node);
    for (const dev of ['lo', 'eth0']) ip(['link', 'set', dev, 'up'], pod);
    ip(['addr', 'add', `${podAddress}/32`, 'dev', 'eth0'], pod);
    ip(['neigh', 'add', '169.254.1.1', 'lladdr', '02:00:00:00:00:01', 'dev', 'eth0', 'nud', 'permanent'], pod);
    ip(['route', 'add', 'default', 'via', '169.254.1.1', 'dev', 'eth0', 'onlink'], pod);
    ip(['-6', 'addr', 'add', `${podAddress6}/128`, 'dev', 'eth0', 'nodad'], pod);
    ip(['-6', 'neigh', 'add', 'fe80::1', 'lladdr', '02:00:00:00:00:01', 'dev', 'eth0', 'nud', 'permanent'], pod);
    ip(['-6', 'route', 'add', 'default', 'via', 'fe80::1', 'dev', 'eth0'], pod);
    // Dual-stack, b and c too (a copy: withIpv6 gives the peer documents an IPv6 family).
    writeSpec(withIpv6(structuredClone(nodeSpecDocument([peerB, peerC]))));
    startAgent();
    await waitFor('/readyz 200', async () => (await readyz()).status === 200, 15_000, logOf);

    // 3 datagrams to a pod of b (10.1.0.0/16), 1 to a pod of c (10.2.0.0/20), each a 142-byte frame at
    // the pod interface (Ethernet 14 + IP 20 + UDP 8 + 100); 2 to b's IPv6 pod (fd00:11::/56), 162 bytes
    // each (IPv6 40); 2 TCP packets to b cut short in their TCP header, dropped as Malformed.
    const udp = { kind: 'udp', sport: 1000, dport: 2000, payload: Buffer.alloc(100, 7) } as const;
    for (let i = 0; i < 3; i++) sendDatagram(pod, datagram({ src: podAddress, dst: '10.1.0.9' }, udp));
    sendDatagram(pod, datagram({ src: podAddress, dst: '10.2.0.9' }, udp));
    for (let i = 0; i < 2; i++) sendDatagram(pod, datagram6({ src: podAddress6, dst: 'fd00:11::9' }, udp));
    for (let i = 0; i < 2; i++)
      sendDatagram(pod, Buffer.concat([ipv4Header({ src: podAddress, dst: '10.1.0.9' }, Proto.TCP, 4), Buffer.alloc(4)]));

    type Inspected = Pick<InspectReport, 'peers' | 'drops'>;
    const inspect = () => cliJson(['inspect', '--pin-root', pinRoot, '--json', '--section', 'peers', 'drops']) as Inspected;
    await waitFor(
      'the datapath to count all 8 packets',
      () => {
        const { peers, drops } = inspect();
        return peers.reduce((n, p) => n + p.counters.txPackets, 0) === 6 && drops.Malformed === 2;
      },
      10_000,
      () => JSON.stringify(inspect()),
    );
    const inspected = inspect();
    const samples = await scrape(port);

    // What strait inspect reads, as the metrics name it: peer ids 5 and 7 are b and c (the spec's).
    const byPeer = new Map([
      [5, 'b'],
      [7, 'c'],
    ]);
    const fromInspect = (unit: 'Packets' | 'Bytes') =>
      inspected.peers
        .flatMap((p) =>
          counterFamilies.flatMap((family) => [
            `direction=rx family=${family} peer=${byPeer.get(p.peerId)} ${p.counters[family][`rx${unit}`]}`,
            `direction=tx family=${family} peer=${byPeer.get(p.peerId)} ${p.counters[family][`tx${unit}`]}`,
          ]),
        )
        .sort();
    assert.deepEqual(series(samples, 'strait_agent_peer_packets_total'), fromInspect('Packets'));
    assert.deepEqual(series(samples, 'strait_agent_peer_bytes_total'), fromInspect('Bytes'));
    assert.deepEqual(
      series(samples, 'strait_agent_dropped_packets_total'),
      Object.entries(inspected.drops)
        .map(([reason, n]) => `reason=${reason} ${n}`)
        .sort(),
    );
    // And the known answers.
    assert.deepEqual(series(samples, 'strait_agent_peer_packets_total'), [
      'direction=rx family=ipv4 peer=b 0',
      'direction=rx family=ipv4 peer=c 0',
      'direction=rx family=ipv6 peer=b 0',
      'direction=rx family=ipv6 peer=c 0',
      'direction=tx family=ipv4 peer=b 3',
      'direction=tx family=ipv4 peer=c 1',
      'direction=tx family=ipv6 peer=b 2',
      'direction=tx family=ipv6 peer=c 0',
    ]);
    assert.deepEqual(series(samples, 'strait_agent_peer_bytes_total'), [
      'direction=rx family=ipv4 peer=b 0',
      'direction=rx family=ipv4 peer=c 0',
      'direction=rx family=ipv6 peer=b 0',
      'direction=rx family=ipv6 peer=c 0',
      'direction=tx family=ipv4 peer=b 426',
      'direction=tx family=ipv4 peer=c 142',
      'direction=tx family=ipv6 peer=b 324',
      'direction=tx family=ipv6 peer=c 0',
    ]);
    assert.deepEqual(series(samples, 'strait_agent_dropped_packets_total'), [
      'reason=Csum 0',
      'reason=ExtHdrs 0',
      'reason=Malformed 2',
      'reason=NoConfig 0',
      'reason=NoNatMapping 0',
      'reason=NoPeer 0',
      'reason=NotOurs 0',
      'reason=TooBig 0',
      'reason=Transit6 0',
      'reason=TransitState 0',
      'reason=Tunnel 0',
    ]);
    assert.deepEqual(series(samples, 'strait_agent_nat_mappings'), ['3']);
    assert.deepEqual(metricNames(samples, 'strait_agent_'), [
      'strait_agent_applied_spec_info',
      'strait_agent_dataplane',
      'strait_agent_dropped_packets_total',
      'strait_agent_gateway_overridden',
      'strait_agent_gateway_switches_total',
      'strait_agent_nat_mappings',
      'strait_agent_peer_bytes_total',
      'strait_agent_peer_packets_total',
      'strait_agent_ready',
      'strait_agent_reconcile_duration_seconds_bucket',
      'strait_agent_reconcile_duration_seconds_count',
      'strait_agent_reconcile_duration_seconds_sum',
      'strait_agent_reconcile_errors_total',
      'strait_agent_spec_generation',
    ]);
  });

  it('counts failed reconciles and answers /readyz 503 with the reason until an apply succeeds', async () => {
    // A collect_md VXLAN device on the overlay's port: strait0 cannot be created beside it.
    ip(['link', 'add', 'blocker', 'type', 'vxlan', 'external', 'dstport', '4789'], node);
    ip(['link', 'set', 'blocker', 'up'], node);
    writeSpec();
    startAgent();
    await waitFor('a failed apply', async () => (await readyz()).body.startsWith('not ready: applying the spec failed:'), 15_000, logOf);
    const failing = await readyz();
    assert.equal(failing.status, 503);
    assert.match(failing.body, /^not ready: applying the spec failed: .*link add strait0 .*\n$/);
    assert.deepEqual(await agentSeries('strait_agent_ready'), ['0']);
    const [errors] = await agentSeries('strait_agent_reconcile_errors_total');
    assert.ok(Number(errors) >= 1, `failed reconciles counted: ${errors}`);

    ip(['link', 'del', 'blocker'], node);
    await waitFor('/readyz 200', async () => (await readyz()).status === 200, 10_000, logOf);
    assert.deepEqual(await agentSeries('strait_agent_ready'), ['1']);
    const [settled] = await agentSeries('strait_agent_reconcile_errors_total');
    const [reconciles] = await agentSeries('strait_agent_reconcile_duration_seconds_count');
    await nextReconcile(statusPath(), 10_000, logOf);
    assert.deepEqual(await agentSeries('strait_agent_reconcile_errors_total'), [settled], 'a reconcile that succeeds counts no error');
    assert.ok(Number((await agentSeries('strait_agent_reconcile_duration_seconds_count'))[0]) > Number(reconciles), 'but is timed');
  });

  it('gives on the kernel fallback what it has: no per-peer or drop series, which only the eBPF datapath counts', async () => {
    // As on any node: the kernel refuses onlink next hops while lo is down.
    ip(['link', 'set', 'lo', 'up'], node);
    writeSpec(nodeSpecDocument([peerB, peerC]));
    startAgent('--dataplane', 'kernel');
    await waitFor('/readyz 200', async () => (await readyz()).status === 200, 15_000, logOf);
    const samples = await scrape(port);
    assert.deepEqual(series(samples, 'strait_agent_dataplane'), ['dataplane=kernel 1']);
    assert.deepEqual(series(samples, 'strait_agent_ready'), ['1']);
    assert.deepEqual(series(samples, 'strait_agent_nat_mappings'), ['1']);
    for (const name of ['strait_agent_peer_packets_total', 'strait_agent_peer_bytes_total', 'strait_agent_dropped_packets_total'])
      assert.deepEqual(series(samples, name), [], name);
  });

  it('refuses to start when its metrics port is taken, naming the flag, address and port and EADDRINUSE, before touching the node', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(port, '127.0.0.1', resolve));
    try {
      writeSpec();
      const code = await startAgent();
      assert.equal(code, 1, logOf());
      assert.deepEqual(JSON.parse(stderr.trim().split('\n').at(-1)!), {
        error: `--metrics-port: 127.0.0.1:${port} is already in use (EADDRINUSE): another process listens there; give another --metrics-port, or 0 for no metrics server (got "${port}")`,
        field: '--metrics-port',
        value: String(port),
      });
      assert.equal(existsSync(pinRoot), false, 'no datapath loaded');
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});

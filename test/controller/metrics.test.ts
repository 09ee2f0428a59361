/**
 * `strait controller`'s metrics and health server (docs/metrics.md), standalone: the hub of three
 * clusters on one run dir, scraped over HTTP; the test stands in for the agents' heartbeats.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cliPath } from '../network-ipam/cli-runner';
import { freePort, get, metricNames, noMetricsServer, scrape, series } from '../support/metrics';
import { waitFor } from '../support/wait';

// B is the hub: A and C number their pods in B's PodCIDR (both remapped in B's view), their
// ExternalCIDRs overlap nothing (kept); B reflects a pod of C to A, which takes one address of B's
// ExternalCIDR.
const clusters = [
  { clusterId: 'cluster-a', podCIDR: '10.0.0.0/16', externalCIDR: '10.220.0.0/24', peers: ['cluster-b'], nodes: ['a-gw'] },
  {
    clusterId: 'cluster-b',
    podCIDR: '10.0.0.0/16',
    externalCIDR: '10.200.0.0/24',
    peers: ['cluster-a', 'cluster-c'],
    nodes: ['b-gw', 'b-w1'],
    reflections: [{ to: 'cluster-a', fromPeer: 'cluster-c', podIP: '10.0.0.10' }],
  },
  { clusterId: 'cluster-c', podCIDR: '10.0.0.0/20', externalCIDR: '10.210.0.0/25', peers: ['cluster-b'], nodes: ['c-gw'] },
];

describe('strait controller: metrics and health (standalone, real processes)', () => {
  let dir: string;
  let runDir: string;
  const children: ChildProcess[] = [];
  const logs = new Map<string, string>();
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'strait-controller-metrics-'));
    runDir = join(dir, 'run');
  });
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  /** A heartbeat dated ahead, so a slow start cannot age it out. */
  const heartbeat = (cluster: string, node: string, ready: boolean) => {
    mkdirSync(join(runDir, cluster, 'status'), { recursive: true });
    writeFileSync(
      join(runDir, cluster, 'status', `${node}.json`),
      JSON.stringify({ ready, time: new Date(Date.now() + 60_000).toISOString(), dataplane: 'ebpf', specGeneration: 1 }),
    );
  };
  const start = (c: (typeof clusters)[number], metrics: string[]): ChildProcess => {
    const config = {
      clusterId: c.clusterId,
      runDir,
      podCIDR: c.podCIDR,
      externalCIDR: c.externalCIDR,
      peers: c.peers,
      reflections: c.reflections ?? [],
      // The first node has a public address, so it wins the first election.
      nodes: c.nodes.map((name, i) => ({
        name,
        underlayAddress: `192.168.${clusters.indexOf(c) + 1}.${i + 1}`,
        podCIDRs: [`${c.podCIDR.split('.').slice(0, 2).join('.')}.${i}.0/24`],
        ...(i === 0 ? { publicAddress: `203.0.113.${clusters.indexOf(c) + 1}` } : {}),
      })),
      heartbeatTimeout: 30,
      interval: 0.1,
    };
    const path = join(dir, `${c.clusterId}.json`);
    writeFileSync(path, JSON.stringify(config));
    for (const node of c.nodes) heartbeat(c.clusterId, node, true);
    const child = spawn(process.execPath, [cliPath, 'controller', '--config', path, ...metrics], { stdio: ['ignore', 'ignore', 'pipe'] });
    logs.set(c.clusterId, '');
    child.stderr!.on('data', (chunk: Buffer) => logs.set(c.clusterId, logs.get(c.clusterId) + chunk.toString()));
    children.push(child);
    return child;
  };
  const logOf = () => [...logs.values()].join('');
  const controllerStatus = () =>
    JSON.parse(readFileSync(join(runDir, 'cluster-b', 'controller.json'), 'utf8')) as {
      gateway: string;
      peers: { state: string }[];
      time: string;
    };

  it('answers /readyz 503 with the last failure until a reconcile succeeds, counting the failed ones', async () => {
    const port = await freePort();
    // A file where B's node specs go: every reconcile of B fails writing them.
    mkdirSync(join(runDir, 'cluster-b'), { recursive: true });
    writeFileSync(join(runDir, 'cluster-b', 'nodes'), 'in the way');
    start(clusters[1]!, ['--metrics-address', '127.0.0.1', '--metrics-port', String(port)]);
    await waitFor('a failed reconcile in the log', () => logOf().includes('reconcile failed'), 10_000, logOf);
    const failing = await get(port, '/readyz');
    assert.equal(failing.status, 503, failing.body);
    assert.match(failing.body, /^not ready: no reconcile done yet \(the last failed: .*nodes.*\)\n$/);
    assert.deepEqual(await get(port, '/healthz'), { status: 200, body: 'ok\n' });
    const before = await scrape(port);
    assert.ok(Number(series(before, 'strait_controller_reconcile_errors_total')[0]) >= 1, 'failed reconciles counted');
    assert.deepEqual(metricNames(before, 'strait_controller_peers'), [], 'no peer states before a reconcile succeeded');

    rmSync(join(runDir, 'cluster-b', 'nodes'));
    await waitFor('/readyz 200', async () => (await get(port, '/readyz')).status === 200, 10_000, logOf);
    assert.deepEqual(await get(port, '/readyz'), { status: 200, body: 'ready\n' });
    const [errors] = series(await scrape(port), 'strait_controller_reconcile_errors_total');
    const seen = controllerStatus().time;
    await waitFor('a reconcile after', () => controllerStatus().time !== seen, 10_000, logOf);
    assert.deepEqual(
      series(await scrape(port), 'strait_controller_reconcile_errors_total'),
      [errors],
      'successful reconciles count no error',
    );
  });

  it('serves the peers per state, the IPAM networks and addresses and the gateway moves, and closes on SIGTERM', async () => {
    const port = await freePort();
    const hub = start(clusters[1]!, ['--metrics-address', '127.0.0.1', '--metrics-port', String(port)]);
    await waitFor('/readyz 200', async () => (await get(port, '/readyz')).status === 200, 10_000, logOf);
    assert.deepEqual(
      series(await scrape(port), 'strait_controller_peers'),
      ['state=ready 0', 'state=refused 0', 'state=remapped 0', 'state=waiting-for-peer 2'],
      'no peer has sent its NetworkConfig',
    );
    start(clusters[0]!, noMetricsServer);
    start(clusters[2]!, noMetricsServer);
    await waitFor("both of B's peers ready", () => controllerStatus().peers.every((p) => p.state === 'ready'), 10_000, logOf);
    // The reflection is mapped in the round after both peers are ready; reflections.json is written after.
    await waitFor(
      "the reflected endpoint's address",
      () => JSON.parse(readFileSync(join(runDir, 'cluster-b', 'reflections.json'), 'utf8')).length === 1,
      10_000,
      logOf,
    );
    const samples = await scrape(port);
    assert.deepEqual(series(samples, 'strait_controller_ipam_external_addresses_in_use'), ['family=ipv4 1']);
    assert.deepEqual(series(samples, 'strait_controller_peers'), [
      'state=ready 2',
      'state=refused 0',
      'state=remapped 0',
      'state=waiting-for-peer 0',
    ]);
    assert.deepEqual(series(samples, 'strait_controller_ipam_peer_networks'), [
      'family=ipv4 kind=external remapped=false 2',
      'family=ipv4 kind=external remapped=true 0',
      'family=ipv4 kind=pod remapped=false 0',
      'family=ipv4 kind=pod remapped=true 2',
    ]);
    assert.deepEqual(
      series(samples, 'strait_controller_ipam_external_addresses_usable'),
      ['family=ipv4 253'],
      '10.200.0.0/24 less network, broadcast and transit',
    );
    assert.deepEqual(series(samples, 'strait_controller_gateway_changes_total'), ['0'], 'a first election is no change');
    assert.deepEqual(series(samples, 'strait_controller_reconcile_errors_total'), ['0']);
    assert.deepEqual(
      metricNames(samples, 'strait_controller_'),
      [
        'strait_controller_gateway_changes_total',
        'strait_controller_ipam_external_addresses_in_use',
        'strait_controller_ipam_external_addresses_usable',
        'strait_controller_ipam_peer_networks',
        'strait_controller_peers',
        'strait_controller_reconcile_duration_seconds_bucket',
        'strait_controller_reconcile_duration_seconds_count',
        'strait_controller_reconcile_duration_seconds_sum',
        'strait_controller_reconcile_errors_total',
      ],
      'no strait_controller_leader: a standalone controller elects no leader',
    );

    // b-gw stops being Ready: the gateway moves to b-w1, once.
    assert.equal(controllerStatus().gateway, 'b-gw');
    heartbeat('cluster-b', 'b-gw', false);
    await waitFor('the gateway on b-w1', () => controllerStatus().gateway === 'b-w1', 10_000, logOf);
    const seen = controllerStatus().time;
    await waitFor('a reconcile after the move', () => controllerStatus().time !== seen, 10_000, logOf);
    assert.deepEqual(series(await scrape(port), 'strait_controller_gateway_changes_total'), ['1']);

    hub.kill('SIGTERM');
    const exited = new Promise((resolve) => hub.once('exit', resolve));
    assert.equal(await Promise.race([exited, sleep(10_000).then(() => 'still running 10 s after SIGTERM')]), 0, logOf());
    await assert.rejects(get(port, '/healthz'), 'the server closed with the controller');
  });
});

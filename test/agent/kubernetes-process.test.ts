/** `strait agent --kubernetes`: a real process against a real node namespace and the lab API server, through the real client. */
import assert from 'node:assert/strict';
import { type ChildProcess, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions } from '@kubernetes/client-node';
import type { NodeDataplaneSpecDocument, NodeDataplaneStatus } from '../../src/api/node-dataplane';
import { findAttachments } from '../../src/dataplane/ebpf/attachments';
import { netnsPath } from '../../src/kernel/netns';
import { spawnAgent } from '../support/agent-process';
import { freePort, noMetricsServer, scrape, series } from '../support/metrics';
import { registerNode } from '../../lab/src/kubernetes-control-plane';
import { type TestApiServer, startTestApiServer } from '../support/apiserver';
import { requireRoot } from '../support/kernel';
import { type CapturedLog, captureLog } from '../support/log-capture';
import { mainRoutes } from '../support/routes';
import { waitFor } from '../support/wait';
import { nodeStatusHeartbeat } from '../support/kubelet';
import { applyChartAccess, chartAgentUser, chartNamespace } from '../support/chart';
import { runStraitIpam } from '../cni/plugin-process';
import { createAgentNode, removeAgentNode } from './agent-node';
import { nodeObject, nodeSpecDocument, peerB, peerC } from '../support/node-specs';
import { attachments, nodeRoutes, peerIds, withPeers } from './node-view';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const strait = { group: 'strait.io', version: 'v1alpha1', plural: 'nodedataplanes' };
const namespace = 'strait-test';
/**
 * status.appliedSpec on Kubernetes, of nodeSpecDocument([peerB]) and of ([peerB, peerC]): the sha256sum
 * of the object's own part (canonicalObjectSpecText: no node list, gateways, role nor peer endpoints).
 */
const specBDigest = 'ec267ae479017567';
const specBCDigest = '4174df7e9b1465f0';
/**
 * strait_agent_applied_spec_info of the whole spec, the sha256sum of its canonical text: nodeSpecDocument([peerB])
 * with n2 (192.0.2.12, 10.0.1.0/24) added to its nodes, and then peer b's gateway moved to 203.0.113.9.
 */
const specBn2Digest = '33a2ac83619adad9';
const specBn2MovedDigest = 'be387726a3d0d3a4';
const attached = ['p-x:strait_from_pod', 'strait0:strait_from_overlay', 'strait0:strait_to_overlay'];
/** The chart's agent ServiceAccount, for the tests that run the agent with the chart's RBAC. */
const agentUser = chartAgentUser('agent-token-5e0c2a');

type Status = NodeDataplaneStatus & {
  conditions: { type: string; status: string; reason: string; message: string; lastTransitionTime: string; observedGeneration?: number }[];
};

describe('strait agent --kubernetes (real process, real kernel, lab API server)', function () {
  requireRoot(this);
  this.timeout(90_000);
  let node: string;
  let pod: string;
  let pinRoot: string;
  let dir: string;
  let api: TestApiServer;
  let requests: CapturedLog;
  let custom: CustomObjectsApi;
  let child: ChildProcess | undefined;
  let stderr: string;

  /**
   * An empty cluster has no namespace of ours: the test makes it, as the Helm chart would. Node n1 is
   * registered as its kubelet would, with the address and pod network nodeSpecDocument lists for it.
   */
  const prepareCluster = async () => {
    const core = api.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    await registerNode(core, { name: 'n1', underlayAddress: '192.0.2.11', podCIDR: '10.0.0.0/24' });
    custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
  };

  beforeEach(async () => {
    ({ node, pod, pinRoot, dir } = createAgentNode('strait-agent-k8s-'));
    stderr = '';
    child = undefined;
    requests = captureLog();
    api = await startTestApiServer({ logger: requests.log, users: [agentUser] });
    await prepareCluster();
    // client-node's own view of the server, as a file (JSON is YAML) for the agent's --kubeconfig.
    writeFileSync(join(dir, 'kubeconfig'), api.kubeConfig.exportConfig(), { mode: 0o600 });
  });
  afterEach(async () => {
    try {
      removeAgentNode({ node, pod, pinRoot, dir }, child);
    } finally {
      await api.close();
    }
  });

  const token = () => (api.kubeConfig.getCurrentUser() as { token: string }).token;
  const logOf = () => `agent log:\n${stderr}`;
  /** The object as the controller writes it on Kubernetes: without the node list, which the agent makes from the Nodes. */
  const createObject = ({ nodes: _nodes, ...stored }: NodeDataplaneSpecDocument) =>
    custom.createClusterCustomObject({ ...strait, body: nodeObject(stored) });
  const patchSpec = (spec: Partial<NodeDataplaneSpecDocument>) =>
    custom.patchClusterCustomObject({ ...strait, name: 'n1', body: { spec } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  const object = async () =>
    (await custom.getClusterCustomObject({ ...strait, name: 'n1' })) as { metadata: { generation: number }; status?: Status };
  const status = async () => (await object()).status;
  /** Each condition as "type status reason generation". */
  const conditions = async () =>
    ((await status())?.conditions ?? []).map((c) => `${c.type} ${c.status} ${c.reason} ${c.observedGeneration}`);
  const hasConditions = (want: string[]) => async () => (await conditions()).join() === want.join();
  const statusWrites = () =>
    requests.lines.filter(
      (l) => l.msg === 'request' && l.method === 'PATCH' && l.path === '/apis/strait.io/v1alpha1/nodedataplanes/n1/status',
    ).length;
  const leaseRequests = () =>
    requests.lines.filter((l) => l.msg === 'request' && String(l.path).startsWith('/apis/coordination.k8s.io/')).length;
  const tunnelRoutes = () =>
    mainRoutes(node)
      .filter((r) => r.dev === 'strait0')
      .map((r) => r.dst)
      .sort();

  /** Starts the agent (as the admin unless `as` says); resolves with its exit code once its whole log is read. */
  const startAgent = (args: string[], as = { kubeconfig: join(dir, 'kubeconfig'), namespace }): Promise<number | null> => {
    const started = spawnAgent(
      [
        '--kubernetes',
        '--kubeconfig',
        as.kubeconfig,
        '--node',
        'n1',
        '--namespace',
        as.namespace,
        '--pin-root',
        pinRoot,
        '--netns',
        node,
        ...noMetricsServer,
        ...args,
      ],
      (text) => (stderr += text),
    );
    child = started.child;
    return started.exited;
  };
  const stopAgent = async (exited: Promise<number | null>) => {
    child!.kill('SIGTERM');
    assert.equal(await Promise.race([exited, sleep(10_000).then(() => 'still running')]), 0, logOf());
  };

  it('applies its NodeDataplane and reports Applied and Ready with the generation, follows a change at once, and refuses a spec the datapath cannot take, keeping the last good one', async () => {
    await createObject(nodeSpecDocument([peerB]));
    // Reconciles every 30 s: whatever happens sooner comes from the informer's events.
    const exited = startAgent(['--interval', '30']);
    await waitFor(
      'Applied and Ready, generation 1',
      hasConditions(['Applied True SpecApplied 1', 'Ready True DatapathReady 1']),
      15_000,
      logOf,
    );
    assert.deepEqual(
      { ...(await status())!, time: 0, conditions: 0 },
      { ready: true, time: 0, conditions: 0, dataplane: 'ebpf', specGeneration: 1, appliedSpec: specBDigest },
      logOf(),
    );
    await waitFor('the attachments', () => attachments(pinRoot, node).join() === attached.join(), 10_000, logOf);
    assert.deepEqual(peerIds(pinRoot), [5]);
    assert.deepEqual(tunnelRoutes(), ['10.1.0.0/16', '10.60.0.0/24']);

    await patchSpec({ peers: [peerB, peerC] });
    await waitFor('peer c in strait_peers', () => peerIds(pinRoot).join() === '5,7', 3_000, logOf);
    assert.equal(withPeers(pinRoot, (m) => m.lookup(7))?.endpoint, '203.0.113.3');
    await waitFor('Applied generation 2', hasConditions(['Applied True SpecApplied 2', 'Ready True DatapathReady 2']), 3_000, logOf);
    assert.deepEqual(tunnelRoutes(), ['10.1.0.0/16', '10.2.0.0/20', '10.60.0.0/24', '10.70.0.0/26']);

    // Valid for the schema, not for the eBPF datapath (an IPv6 tunnel end on an IPv4 underlay): refused, naming the field and value.
    await patchSpec({ node: { ...nodeSpecDocument().node, publicAddress: '2001:db8::1' } });
    await waitFor(
      'Applied False, generation 3',
      hasConditions(['Applied False SpecRejected 3', 'Ready True DatapathReady 2']),
      3_000,
      logOf,
    );
    const applied = (await status())!.conditions[0]!;
    assert.match(
      applied.message,
      /^spec rejected: spec\.node\.publicAddress: is IPv6, not the family of spec\.node\.underlayAddress .*"2001:db8::1"/,
    );
    assert.equal((await status())!.appliedSpec, specBCDigest, 'the last good spec is the one in force');
    assert.deepEqual(peerIds(pinRoot), [5, 7]);
    assert.deepEqual(tunnelRoutes(), ['10.1.0.0/16', '10.2.0.0/20', '10.60.0.0/24', '10.70.0.0/26']);

    await stopAgent(exited);
    assert.deepEqual(attachments(pinRoot, node), attached, 'the datapath stays in place');
    assert.equal(leaseRequests(), 0, 'no Lease: an agent has no heartbeat of its own');
    assert.ok(stderr.includes('agent started'), logOf());
    assert.ok(!stderr.includes(token()), 'the token is never logged');
  });

  it('keeps the datapath while the API server is down, and follows the object on a new server on the same port', async () => {
    await createObject(nodeSpecDocument([peerB]));
    // A status refresh every second: writes are tried (and fail) while the server is down.
    const exited = startAgent(['--interval', '0.2', '--status-refresh', '1']);
    await waitFor('Applied', hasConditions(['Applied True SpecApplied 1', 'Ready True DatapathReady 1']), 15_000, logOf);
    await waitFor('the attachments', () => attachments(pinRoot, node).join() === attached.join(), 10_000, logOf);

    await api.stop();
    await waitFor('the informer noticing', () => stderr.includes('informer lost its watch'), 10_000, logOf);
    // Reconciles go on (every 0.2 s) with the cached object: nothing changes, nothing is removed.
    await sleep(2_000);
    assert.equal(child!.exitCode, null, 'the agent keeps running');
    const failedWrites = () =>
      stderr.split('\n').filter((l) => l.includes('"msg":"cannot write the status; retrying with the next report"')).length;
    assert.equal(failedWrites(), 1, `a failed status write is logged once\n${logOf()}`);
    assert.deepEqual(peerIds(pinRoot), [5]);
    assert.deepEqual(attachments(pinRoot, node), attached);
    assert.deepEqual(tunnelRoutes(), ['10.1.0.0/16', '10.60.0.0/24']);

    // A new, empty server: the object comes back (a restore), with a new peer.
    await api.start();
    await prepareCluster();
    await createObject(nodeSpecDocument([peerB, peerC]));
    await waitFor('peer c in strait_peers', () => peerIds(pinRoot).join() === '5,7', 30_000, logOf);
    // A retried write of the old status may land on the new object first: wait for the new spec's.
    await waitFor("the new spec's status on the new object", async () => (await status())?.appliedSpec === specBCDigest, 10_000, logOf);
    assert.deepEqual(await conditions(), ['Applied True SpecApplied 1', 'Ready True DatapathReady 1']);
    assert.ok(stderr.includes('"msg":"status written again"'), logOf());
    await stopAgent(exited);
  });

  it('writes no status while only the time changes, though it reconciles (a map entry deleted by hand is repaired at the resync)', async () => {
    await createObject(nodeSpecDocument([peerB]));
    const exited = startAgent(['--interval', '0.2', '--resync-interval', '0.2']);
    await waitFor('Applied', hasConditions(['Applied True SpecApplied 1', 'Ready True DatapathReady 1']), 15_000, logOf);
    const writes = statusWrites();
    assert.equal(
      withPeers(pinRoot, (m) => m.delete(5)),
      true,
    );
    await waitFor('peer b repaired', () => peerIds(pinRoot).join() === '5', 5_000, logOf);
    // Ten more reconciles at --interval 0.2.
    await sleep(2_000);
    assert.equal(statusWrites(), writes, 'no status write in 2 s of reconciles that changed nothing (the refresh is 30 s)');
    await stopAgent(exited);
  });

  it("programs the node list it reads from the Node objects and the gateways of its cluster's StraitGateway at once, with no status write for either, and nothing for a Node's status heartbeat", async () => {
    await createObject(nodeSpecDocument([peerB]));
    // Reconciles every 30 s: whatever happens sooner comes from the informers' events. Each reconcile
    // reads the whole node, so a change by hand shows whether one ran.
    const port = await freePort();
    const exited = startAgent(['--interval', '30', '--resync-interval', '0.001', '--metrics-port', String(port)]);
    await waitFor('Applied', hasConditions(['Applied True SpecApplied 1', 'Ready True DatapathReady 1']), 15_000, logOf);
    assert.equal((await status())!.appliedSpec, specBDigest, 'the digest of the object as stored');
    assert.deepEqual(nodeRoutes(pinRoot), ['10.0.0.0/24 192.0.2.11']);

    // A change by hand that only a reconcile repairs: neither a Node's status heartbeat nor the agent's
    // own status write may cause one.
    assert.equal(
      withPeers(pinRoot, (m) => m.delete(5)),
      true,
    );
    const core = api.kubeConfig.makeApiClient(CoreV1Api);
    await nodeStatusHeartbeat(core, 'n1');
    await sleep(1_000);
    assert.deepEqual(peerIds(pinRoot), [], `no reconcile for a Node status heartbeat\n${logOf()}`);

    const writes = statusWrites();
    const before = (await status())!;
    const running = async () => series(await scrape(port), 'strait_agent_applied_spec_info');
    await registerNode(core, { name: 'n2', underlayAddress: '192.0.2.12', podCIDR: '10.0.1.0/24' });
    await waitFor('n2 in strait_nodes', () => nodeRoutes(pinRoot).join() === '10.0.0.0/24 192.0.2.11,10.0.1.0/24 192.0.2.12', 3_000, logOf);
    assert.deepEqual(peerIds(pinRoot), [5], 'the reconcile of the new node list repaired the peer too');
    await waitFor('the whole spec with n2 on /metrics', async () => (await running()).join() === `spec=${specBn2Digest} 1`, 3_000, logOf);

    // Peer b's gateway moves (the controller writes the StraitGateway only): applied at once.
    await custom.createClusterCustomObject({
      group: 'strait.io',
      version: 'v1alpha1',
      plural: 'straitgateways',
      body: {
        apiVersion: 'strait.io/v1alpha1',
        kind: 'StraitGateway',
        metadata: { name: 'a' },
        spec: {
          activeGateway: { name: 'n1', underlayAddress: '192.0.2.11' },
          peers: [{ clusterId: 'b', endpoint: { address: '203.0.113.9', port: 4789 } }],
        },
      },
    });
    await waitFor('peer b at its new gateway', () => withPeers(pinRoot, (m) => m.lookup(5))?.endpoint === '203.0.113.9', 3_000, logOf);
    await waitFor('the moved gateway on /metrics', async () => (await running()).join() === `spec=${specBn2MovedDigest} 1`, 3_000, logOf);
    // The NodeDataplane did not change, so neither does the status: a Node added or a gateway moved costs
    // no agent a write (O(1) writes per move however many nodes).
    await sleep(500);
    assert.equal(statusWrites(), writes, 'no status write for a Node added nor for a gateway move');
    assert.deepEqual({ ...(await status())!, time: 0 }, { ...before, time: 0 });
    assert.equal(before.specGeneration, 1);
    await stopAgent(exited);
  });

  it('a ready gateway candidate writes no Lease (its liveness is the datapath answering probes), and refreshes an unchanged status every --status-refresh', async () => {
    const candidate = nodeSpecDocument([peerB]);
    await createObject({ ...candidate, node: { ...candidate.node, gatewayCandidate: true } });
    const exited = startAgent(['--interval', '0.2', '--status-refresh', '1']);
    await waitFor('Applied', hasConditions(['Applied True SpecApplied 1', 'Ready True DatapathReady 1']), 15_000, logOf);

    // Nothing changes but the time: written again at the refresh, the transition times kept.
    const before = (await status())!;
    const writes = statusWrites();
    await waitFor('two refreshes', () => statusWrites() >= writes + 2, 5_000, logOf);
    const after = (await status())!;
    assert.notEqual(after.time, before.time);
    assert.deepEqual(after.conditions, before.conditions);

    await stopAgent(exited);
    assert.equal(leaseRequests(), 0, 'no request to coordination.k8s.io at all');
  });

  it("serves the pool IPAM on --pool-ipam-socket beside the datapath: the datapath does not wait for it, strait-ipam STATUS answers ready once the chart's role lets it read, and SIGTERM removes the socket", async () => {
    // The agent as the chart's ServiceAccount, with the chart's RBAC without the pool IPAM: it cannot
    // list IPPools, so its pool IPAM never gets ready until the role is the one of poolIpam.enabled.
    const admin = api.kubeConfig;
    await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: chartNamespace } } });
    await applyChartAccess(admin);
    const kubeconfig = api.kubeconfigFor(agentUser.token).path;
    await createObject(nodeSpecDocument([peerB]));
    const socket = join(dir, 'run', 'ipam.sock');
    const exited = startAgent(['--interval', '30', '--pool-ipam-socket', socket, '--pool-ipam-gc-interval', '3600'], {
      kubeconfig,
      namespace: chartNamespace,
    });
    const status = () =>
      runStraitIpam(
        { CNI_COMMAND: 'STATUS' },
        { cniVersion: '1.1.0', name: 'underlay', type: 'macvlan', ipam: { type: 'strait-ipam', socket } },
      );

    await waitFor('Applied and Ready', hasConditions(['Applied True SpecApplied 1', 'Ready True DatapathReady 1']), 15_000, logOf);
    await waitFor('the socket', () => existsSync(socket), 5_000, logOf);
    const notReady = await status();
    assert.deepEqual(
      { status: notReady.status, stdout: JSON.parse(notReady.stdout) },
      {
        status: 1,
        stdout: {
          cniVersion: '1.1.0',
          code: 50,
          msg: `the pool IPAM service on ${socket} is not ready: the pool IPAM service of node n1 is still reading the API server`,
        },
      },
      logOf(),
    );
    const refused = (resource: string) =>
      requests.lines.some(
        (l) =>
          l.msg ===
          `${resource}.strait.io is forbidden: User "${agentUser.name}" cannot list resource "${resource}" in API group "strait.io" at the cluster scope`,
      );
    assert.ok(refused('straitippools'), 'StraitIPPools refused by RBAC');

    // helm upgrade --set poolIpam.enabled=true: the informers' next relist (at most 30 s apart) succeeds.
    await applyChartAccess(admin, ['--set', 'poolIpam.enabled=true']);
    await waitFor('STATUS ready', async () => (await status()).status === 0, 40_000, logOf);
    assert.deepEqual(await status(), { status: 0, stdout: '', stderr: '' });
    assert.ok(stderr.includes('"msg":"pool IPAM serving"'), logOf());

    await stopAgent(exited);
    assert.equal(existsSync(socket), false, 'the socket is removed');
    assert.deepEqual(attachments(pinRoot, node), attached, 'the datapath stays in place');
  });

  it("takes the datapath off the node at SIGTERM once its DaemonSet is deleted (helm uninstall), and only then, as the chart's ServiceAccount", async () => {
    const admin = api.kubeConfig;
    await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: chartNamespace } } });
    await applyChartAccess(admin);
    const apps = admin.makeApiClient(AppsV1Api);
    const labels = { 'app.kubernetes.io/name': 'strait', 'app.kubernetes.io/component': 'agent' };
    const daemonSet = {
      metadata: { name: 'strait-agent', namespace: chartNamespace },
      spec: {
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name: 'agent', image: 'strait' }] } },
      },
    };
    await apps.createNamespacedDaemonSet({ namespace: chartNamespace, body: daemonSet });
    await createObject(nodeSpecDocument([peerB]));
    const as = { kubeconfig: api.kubeconfigFor(agentUser.token).path, namespace: chartNamespace };
    // strait-ipam as the chart's init container leaves it (src/cni/install.ts): a launcher naming its runtime.
    const cniBin = join(dir, 'cni-bin');
    const runtimes = join(dir, 'strait-ipam-runtimes');
    const runtime = join(runtimes, 'strait-ipam-Ab12Cd');
    mkdirSync(join(runtime, 'dist', 'src', 'cni'), { recursive: true });
    mkdirSync(cniBin);
    const launcher = `#!/bin/sh\nexec '${runtime}/node' '${runtime}/dist/src/cni/main.js' "$@"\n`;
    writeFileSync(join(cniBin, 'strait-ipam'), launcher, { mode: 0o755 });
    const pluginFlags = ['--pool-ipam-plugin-dir', cniBin, '--pool-ipam-runtime-dir', runtimes];
    const daemonSetWatches = () =>
      requests.lines.filter((l) => l.msg === 'request' && l.verb === 'watch' && l.resource === 'daemonsets').length;
    const run = async (whileRunning: () => Promise<void>) => {
      stderr = '';
      const watchesBefore = daemonSetWatches();
      const exited = startAgent(['--interval', '30', '--daemonset', 'strait-agent', ...pluginFlags], as);
      await waitFor('the DaemonSet watched', () => daemonSetWatches() > watchesBefore, 15_000, logOf);
      await waitFor('the attachments', () => attachments(pinRoot, node).join() === attached.join(), 10_000, logOf);
      await whileRunning();
      await stopAgent(exited);
    };

    // A restart (a rolling update, a drain): the DaemonSet is there, the next agent finds the datapath.
    await run(async () => {});
    assert.deepEqual(attachments(pinRoot, node), attached, 'the datapath stays in place');
    assert.ok(stderr.includes('"msg":"stopped; the datapath stays in place for the next agent"'), logOf());
    assert.equal(readFileSync(join(cniBin, 'strait-ipam'), 'utf8'), launcher, 'strait-ipam stays for the next agent');
    assert.ok(existsSync(runtime));

    // helm uninstall: the DaemonSet goes first, then the roles and the ServiceAccount, then the Pod's SIGTERM.
    await run(async () => {
      await apps.deleteNamespacedDaemonSet({ name: 'strait-agent', namespace: chartNamespace });
      await waitFor('the deletion seen', () => stderr.includes('our workload is deleted: the release is being uninstalled'), 5_000, logOf);
      await api.kubeConfig
        .makeApiClient(RbacAuthorizationV1Api)
        .deleteNamespacedRoleBinding({ name: 'strait-agent', namespace: chartNamespace });
    });
    assert.ok(stderr.includes('"msg":"the release is uninstalled: the datapath is taken off the node"'), logOf());
    assert.deepEqual(findAttachments(pinRoot, netnsPath(node)), []);
    assert.equal(existsSync(pinRoot), false, 'no pin is left');
    assert.deepEqual(tunnelRoutes(), []);
    assert.equal(spawnSync('ip', ['-n', node, 'link', 'show', 'strait0']).status, 1, 'strait0 is removed');
    // strait-ipam: its runtime gone, its launcher now only lets the pods that used it be deleted.
    assert.equal(existsSync(runtimes), false, "the plugin's runtime is removed");
    const del = spawnSync(join(cniBin, 'strait-ipam'), [], { env: { CNI_COMMAND: 'DEL' }, input: '{}', encoding: 'utf8' });
    const add = spawnSync(join(cniBin, 'strait-ipam'), [], { env: { CNI_COMMAND: 'ADD' }, input: '{}', encoding: 'utf8' });
    assert.deepEqual([del.status, add.status, (JSON.parse(add.stdout) as { code: number }).code], [0, 1, 50]);
  });

  it('refuses --spec with --kubernetes before touching the node', async () => {
    let err = '';
    const run = spawnAgent(
      ['--kubernetes', '--node', 'n1', '--spec', join(dir, 'n1.json'), '--pin-root', pinRoot, ...noMetricsServer],
      (text) => (err += text),
    );
    const code = await run.exited;
    assert.equal(code, 1);
    assert.deepEqual(JSON.parse(err), {
      error: `--spec: is the file mode; --kubernetes reads the NodeDataplane from the API server and writes its status there (got ${JSON.stringify(join(dir, 'n1.json'))})`,
      field: '--spec',
      value: join(dir, 'n1.json'),
    });
    assert.equal(existsSync(pinRoot), false);
  });
});

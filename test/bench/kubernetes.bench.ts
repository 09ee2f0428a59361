/**
 * Strait on Kubernetes at scale, through the lab's API server and the real client (HTTPS on loopback):
 * the IPAM as objects (10,000 NatMappings saved, then a change of 100), the controller writing a
 * NodeDataplane for each of 1,000 Nodes and what one more Node costs, and an agent's time from a change
 * of its NodeDataplane to the maps being written. API requests are counted from the server's request log.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { readControllerConfig } from '../../src/api/controller-config';
import { runKubernetesController } from '../../src/controller/kubernetes/controller';
import { localObjects } from '../../src/controller/kubernetes/objects';
import { reconcile } from '../../src/controller/reconcile';
import { emptyExchange } from '../../src/controller/exchange-view';
import { mapEndpoint, unmapEndpoint } from '../../src/network-ipam/endpoints';
import { initializeIpam } from '../../src/network-ipam/initialize';
import { addPeer, setRemoteView } from '../../src/network-ipam/peers';
import type { IpamState } from '../../src/network-ipam/state';
import { ApiIpamStore } from '../../src/controller/kubernetes/ipam-store';
import { defaultNamespace } from '../../src/k8s/names';
import { registerNode, seedCluster } from '../../lab/src/kubernetes-control-plane';
import { nodeObject, nodeSpecDocument, peerB, peerC } from '../support/node-specs';
import { createAgentNode, removeAgentNode } from '../agent/agent-node';
import { peerIds } from '../agent/node-view';
import { startTestApiServer } from '../support/apiserver';
import { noMetricsServer } from '../support/metrics';
import { waitFor } from '../support/wait';
import { captureLog } from '../support/log-capture';
import { type BenchFigure, type BenchSuite, median } from './result';

const round = (n: number) => Math.round(n * 10) / 10;
const strait = { group: 'strait.io', version: 'v1alpha1' };
const cli = join(__dirname, '..', '..', 'src', 'cli', 'main.js');

/** Requests the server logged, by method, since `from` (an index into the log). */
const writesSince = (lines: Record<string, unknown>[], from: number) =>
  lines.slice(from).filter((l) => l.msg === 'request' && l.method !== 'GET').length;

async function ipamFigures(figure: (name: string, value: number, unit: string, note?: string) => void): Promise<void> {
  const requests = captureLog();
  const api = await startTestApiServer({ logger: requests.log });
  try {
    let state: IpamState = initializeIpam(undefined, { podCIDR: '10.0.0.0/16', externalCIDR: '100.64.0.0/10' }).state;
    state = addPeer(state, { clusterId: 'peer-a', podCIDR: '10.0.0.0/16', externalCIDR: '100.64.0.0/10' }).state;
    state = setRemoteView(state, { clusterId: 'peer-a', localNATPodCIDR: '10.1.0.0/16', localNATExternalCIDR: '100.128.0.0/10' }).state;
    for (let i = 0; i < 10_000; i++) state = mapEndpoint(state, 'peer-a', `20.0.${i >> 8}.${i & 0xff}`).state;
    const store = new ApiIpamStore({ api: api.kubeConfig.makeApiClient(CustomObjectsApi), clusterId: 'bench', leading: () => true });
    await store.load();
    let mark = requests.lines.length;
    let started = process.hrtime.bigint();
    await store.save({ primary: state });
    const saveMs = Number(process.hrtime.bigint() - started) / 1e6;
    const saved = writesSince(requests.lines, mark);
    figure(
      'save 10,000 NatMappings as objects (empty API server)',
      round(saved / (saveMs / 1000)),
      'objects/s',
      `${saved} writes in ${Math.round(saveMs)} ms`,
    );

    for (let i = 0; i < 50; i++) state = unmapEndpoint(state, 'peer-a', `20.0.${i >> 8}.${i & 0xff}`).state;
    for (let i = 10_000; i < 10_050; i++) state = mapEndpoint(state, 'peer-a', `20.0.${i >> 8}.${i & 0xff}`).state;
    mark = requests.lines.length;
    started = process.hrtime.bigint();
    await store.save({ primary: state });
    figure(
      'save a change of 100 NatMappings (50 unmapped, 50 mapped) among 10,000',
      round(Number(process.hrtime.bigint() - started) / 1e6),
      'ms',
      `${writesSince(requests.lines, mark)} API writes`,
    );

    started = process.hrtime.bigint();
    await new ApiIpamStore({ api: api.kubeConfig.makeApiClient(CustomObjectsApi), clusterId: 'bench', leading: () => true }).load();
    figure('load the IPAM from 10,002 objects (a new leader)', round(Number(process.hrtime.bigint() - started) / 1e6), 'ms');
  } finally {
    await api.close();
  }
}

/** The controller's own work for 1,000 nodes, without the API server: what every reconcile pays. */
function planningFigures(figure: (name: string, value: number, unit: string, note?: string) => void): void {
  const nodes = Array.from({ length: 1000 }, (_, k) => ({
    name: `n${k + 1}`,
    underlayAddress: `192.168.${(k + 1) >> 8}.${(k + 1) & 0xff}`,
    podCIDRs: [`10.${(k + 1) >> 8}.${(k + 1) & 0xff}.0/24`],
  }));
  const config = readControllerConfig({ clusterId: 'bench', podCIDR: '10.0.0.0/8', externalCIDR: '100.64.0.0/10', nodes });
  const exchange = emptyExchange();
  const samples = { reconcile: [] as number[], objects: [] as number[] };
  let size = 0;
  for (let round = 0; round < 3; round++) {
    let started = process.hrtime.bigint();
    const result = reconcile({ config, ipam: undefined, exchange, heartbeats: new Map(), previous: undefined, now: Date.now() });
    samples.reconcile.push(Number(process.hrtime.bigint() - started) / 1e6);
    started = process.hrtime.bigint();
    const { nodeDataplanes } = localObjects(result, 'bench');
    samples.objects.push(Number(process.hrtime.bigint() - started) / 1e6);
    size = JSON.stringify(nodeDataplanes[0]).length;
  }
  figure('controller, pure: reconcile() of 1,000 nodes, median of 3', round(median(samples.reconcile)), 'ms');
  figure(
    'controller, pure: the 1,000 NodeDataplane objects of that reconcile (localObjects), median of 3',
    round(median(samples.objects)),
    'ms',
  );
  figure('one NodeDataplane at 1,000 nodes, as JSON (it lists no nodes: each agent reads the Node objects)', round(size / 1024), 'KiB');
}

async function controllerFigures(figure: (name: string, value: number, unit: string, note?: string) => void): Promise<void> {
  const requests = captureLog();
  const api = await startTestApiServer({ logger: requests.log });
  const stop = new AbortController();
  let done: Promise<void> | undefined;
  try {
    const node = (i: number) => ({
      name: `n${i}`,
      underlayAddress: `192.168.${i >> 8}.${i & 0xff}`,
      podCIDR: `10.${i >> 8}.${i & 0xff}.0/24`,
      publicAddress: `203.0.${i >> 8}.${i & 0xff}`,
    });
    await seedCluster(
      api.kubeConfig,
      Array.from({ length: 1000 }, (_, i) => node(i + 1)),
      new Map(),
    );
    const custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
    const count = async () =>
      ((await custom.listClusterCustomObject({ ...strait, plural: 'nodedataplanes' })) as { items: unknown[] }).items.length;
    const config = readControllerConfig(
      { clusterId: 'bench', podCIDR: '10.0.0.0/8', externalCIDR: '100.64.0.0/10', interval: 0.5 },
      'kubernetes',
    );
    const mark = requests.lines.length;
    const started = Date.now();
    done = runKubernetesController(
      { config, kubeConfig: api.kubeConfig, namespace: defaultNamespace, identity: 'bench', log: captureLog('silent').log },
      stop.signal,
    );
    await waitFor('1,000 NodeDataplanes', async () => (await count()) === 1000, 300_000, undefined, 200);
    const ms = Date.now() - started;
    figure(
      'controller: first NodeDataplane of each of 1,000 Nodes, from start (leader election, lists, IPAM, writes)',
      round(1000 / (ms / 1000)),
      'objects/s',
      `${ms} ms, ${writesSince(requests.lines, mark)} API writes`,
    );

    // One more Node: the controller writes its NodeDataplane; no other object lists the nodes (each
    // agent reads the Node objects), so none other is rewritten.
    await sleep(2000);
    const before = requests.lines.length;
    const added = Date.now();
    await registerNode(api.kubeConfig.makeApiClient(CoreV1Api), {
      name: 'n1001',
      underlayAddress: '192.168.3.233',
      podCIDR: '10.3.233.0/24',
    });
    await waitFor("the new Node's NodeDataplane", async () => (await count()) === 1001, 300_000, undefined, 200);
    const addedMs = Date.now() - added;
    // Four reconciles more (interval 0.5 s): the writes they would make count too.
    await sleep(2000);
    figure(
      'controller: one Node added to 1,000 (its NodeDataplane written; none lists the nodes)',
      addedMs,
      'ms',
      `${writesSince(requests.lines, before)} API writes, the Node's registration included`,
    );
  } finally {
    stop.abort();
    await done;
    await api.close();
  }
}

async function agentFigures(figure: (name: string, value: number, unit: string, note?: string) => void): Promise<void> {
  const api = await startTestApiServer();
  const agentNode = createAgentNode('strait-bench-agent-');
  const { node, pinRoot, dir } = agentNode;
  let child: ChildProcess | undefined;
  try {
    await api.kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: defaultNamespace } } });
    writeFileSync(join(dir, 'kubeconfig'), api.kubeConfig.exportConfig(), { mode: 0o600 });
    const custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
    // As the controller writes it (no node list), and the Node the agent makes its node list from.
    const { nodes: _nodes, ...stored } = nodeSpecDocument([peerB]);
    await custom.createClusterCustomObject({ ...strait, plural: 'nodedataplanes', body: nodeObject(stored) });
    await registerNode(api.kubeConfig.makeApiClient(CoreV1Api), { name: 'n1', underlayAddress: '192.0.2.11', podCIDR: '10.0.0.0/24' });
    // Reconciles every 30 s: a change within that comes from the informer's watch event.
    child = spawn(
      process.execPath,
      [
        cli,
        'agent',
        '--kubernetes',
        '--kubeconfig',
        join(dir, 'kubeconfig'),
        '--node',
        'n1',
        '--namespace',
        defaultNamespace,
        '--pin-root',
        pinRoot,
        '--netns',
        node,
        '--interval',
        '30',
        ...noMetricsServer,
      ],
      { stdio: 'ignore' },
    );
    await waitFor('the first spec in the maps', () => peerIds(pinRoot).join() === '5', 60_000);
    const samples: number[] = [];
    for (let i = 0; i < 10; i++) {
      const peers = i % 2 === 0 ? [peerB, peerC] : [peerB];
      const want = i % 2 === 0 ? '5,7' : '5';
      const started = process.hrtime.bigint();
      await custom.patchClusterCustomObject(
        { ...strait, plural: 'nodedataplanes', name: 'n1', body: { spec: { peers } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      await waitFor('the change in strait_peers', () => peerIds(pinRoot).join() === want, 10_000, undefined, 2);
      samples.push(Number(process.hrtime.bigint() - started) / 1e6);
      await sleep(300);
    }
    figure(
      'agent: a NodeDataplane change (a peer added or removed) to the peer map written, median of 10',
      round(median(samples)),
      'ms',
      `min ${round(Math.min(...samples))}, max ${round(Math.max(...samples))}; includes the API write and the watch event`,
    );
  } finally {
    try {
      removeAgentNode(agentNode, child);
    } finally {
      await api.close();
    }
  }
}

export const run: BenchSuite = async () => {
  const figures: BenchFigure[] = [];
  const figure = (name: string, value: number, unit: string, note?: string) =>
    figures.push({ suite: 'kubernetes', name, value, unit, ...(note ? { note } : {}) });
  await ipamFigures(figure);
  planningFigures(figure);
  await controllerFigures(figure);
  await agentFigures(figure);
  return figures;
};

/**
 * The lab on Kubernetes (`strait lab up --control-plane kubernetes`): one API server per cluster
 * (`strait lab apiserver`, loopback, a token of its own), seeded as a cluster would be before Strait is
 * installed: the namespace, a Node per lab node (InternalIP, podCIDRs, the Ready condition, the
 * gateway-candidate label and the public-address annotation), and for each peering a Secret holding
 * the peer's kubeconfig, as a person would create it. The controllers and agents then run against it
 * (lab.ts starts them with --kubernetes).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, type KubeConfig, type V1Node } from '@kubernetes/client-node';
import { runDirPaths } from '../api/run-dir';
import { StateError } from '../errors';
import { defaultNamespace, peerKubeconfigKey, peerSecretName } from '../k8s/names';
import { gatewayCandidateLabel, publicAddressAnnotation } from '../k8s/cluster-nodes';
import { loadKubeConfig } from '../k8s/kubeconfig';
import { kubeconfigPath } from './control-plane';
import { startProcess } from './processes';
import type { LabCluster, LabTopology } from './topology';

const tokenPath = (runDir: string, cluster: string) => join(runDir, runDirPaths.apiServerToken(cluster));

export const clusterKubeConfig = (runDir: string, cluster: string): KubeConfig => loadKubeConfig({ file: kubeconfigPath(runDir, cluster) });

/** Starts each cluster's API server and waits until every one has written its kubeconfig. */
async function startApiServers(topology: LabTopology, runDir: string, cli: string): Promise<void> {
  for (const cluster of topology.clusters) {
    mkdirSync(join(runDir, cluster.id), { recursive: true });
    writeFileSync(tokenPath(runDir, cluster.id), `${randomBytes(24).toString('hex')}\n`, { mode: 0o600 });
    startProcess(runDir, `apiserver-${cluster.id}`, [
      process.execPath, cli, 'lab', 'apiserver',
      '--token-file', tokenPath(runDir, cluster.id),
      '--kubeconfig', kubeconfigPath(runDir, cluster.id),
      '--cluster', cluster.id,
    ]);
  }
  for (const deadline = Date.now() + 30_000; ; await sleep(100)) {
    const missing = topology.clusters.filter((c) => !existsSync(kubeconfigPath(runDir, c.id))).map((c) => c.id);
    if (missing.length === 0) return;
    if (Date.now() > deadline) throw new StateError(`the API servers of ${missing.join(', ')} did not start in 30 s; see ${join(runDir, 'logs')}`);
  }
}

/** A lab node as the kubelet would register it. */
type LabNode = Pick<LabCluster['nodes'][number], 'name' | 'podCIDR' | 'underlayAddress'> & { publicAddress?: string };

/** A Node as a kubelet registers it: with its status (InternalIP, Ready) in the same request. */
function nodeObject(node: LabNode): V1Node {
  return {
    metadata: {
      name: node.name,
      labels: { [gatewayCandidateLabel]: 'true', 'kubernetes.io/hostname': node.name },
      ...(node.publicAddress ? { annotations: { [publicAddressAnnotation]: node.publicAddress } } : {}),
    },
    spec: { podCIDR: node.podCIDR, podCIDRs: [node.podCIDR] },
    status: {
      addresses: [{ type: 'InternalIP', address: node.underlayAddress }, { type: 'Hostname', address: node.name }],
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'the lab node is up', lastTransitionTime: new Date(), lastHeartbeatTime: new Date() }],
    },
  };
}

/** Registers a Node as a kubelet does: one create, so no one sees it half registered (without an address). */
export async function registerNode(core: CoreV1Api, node: LabNode): Promise<void> {
  await core.createNode({ body: nodeObject(node) });
}

/**
 * A cluster as it is before Strait is installed: the namespace, its Nodes (registered and Ready), and a
 * Secret with each peer's kubeconfig (`peers`: cluster id → kubeconfig text).
 */
export async function seedCluster(kubeConfig: KubeConfig, nodes: readonly LabNode[], peers: ReadonlyMap<string, string>): Promise<void> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: defaultNamespace } } });
  for (const node of nodes) await registerNode(core, node);
  for (const [peer, kubeconfig] of peers) {
    await core.createNamespacedSecret({
      namespace: defaultNamespace,
      body: { metadata: { name: peerSecretName(peer) }, type: 'Opaque', data: { [peerKubeconfigKey]: Buffer.from(kubeconfig).toString('base64') } },
    });
  }
}

/** API servers up and seeded; the controllers and agents are started next. */
export async function prepareKubernetes(topology: LabTopology, runDir: string, cli: string): Promise<void> {
  await startApiServers(topology, runDir, cli);
  for (const cluster of topology.clusters) {
    const peers = topology.peerings.filter((p) => p.includes(cluster.id)).map(([a, b]) => (a === cluster.id ? b : a));
    await seedCluster(clusterKubeConfig(runDir, cluster.id), cluster.nodes, new Map(peers.map((peer) => [peer, readFileSync(kubeconfigPath(runDir, peer), 'utf8')])));
  }
}

/**
 * The lab on Kubernetes (`strait-lab up --control-plane kubernetes`): one API server per cluster
 * (`strait-lab apiserver`, loopback, a token of its own) with its objects in an etcd of its own
 * (etcd.ts; `lab down` stops it with every lab process and removes its data with the run directory),
 * seeded as a cluster would be before Strait is installed: the namespace, a Node per lab node (InternalIP, podCIDRs, the Ready condition, the
 * gateway-candidate label and the public-address annotation), and for each peering a Secret holding
 * the peer's kubeconfig, as a person would create it. The controllers and agents then run against it
 * (lab.ts starts them with --kubernetes).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, type KubeConfig, type V1Node } from '@kubernetes/client-node';
import { runDirPaths } from '../../src/api/run-dir';
import { StateError } from '../../src/errors';
import { writeFileAtomic } from '../../src/store/atomic-file';
import { defaultNamespace, peerKubeconfigKey, peerSecretName } from '../../src/k8s/names';
import { gatewayCandidateLabel, publicAddressAnnotation } from '../../src/k8s/cluster-nodes';
import { loadKubeConfig } from '../../src/k8s/kubeconfig';
import { identityKubeconfigPath, kubeconfigPath, labConfigDir } from './control-plane';
import { type LabChartSettings, installChart, labChartValues, labConfigMap, labRelease } from './lab-chart';
import { kubeconfigText, writeKubeconfig } from './apiserver/kubeconfig';
import { isAlive, startProcess, stopProcess } from './processes';
import { selfSignedCertificate } from './apiserver/certificate';
import { clientUrl, etcdCommand, newMember, waitUntilHealthy } from './etcd';
import type { LabCluster, LabTopology } from './topology';

const tokenPath = (runDir: string, cluster: string) => join(runDir, runDirPaths.apiServerToken(cluster));

export const clusterKubeConfig = (runDir: string, cluster: string): KubeConfig => loadKubeConfig({ file: kubeconfigPath(runDir, cluster) });

const peersOf = (topology: LabTopology, cluster: string) =>
  topology.peerings.filter((p) => p.includes(cluster)).map(([a, b]) => (a === cluster ? b : a));
const newToken = () => randomBytes(24).toString('hex');

/** A ServiceAccount's user name and groups, as kube-apiserver authenticates its tokens. */
const serviceAccountUser = (name: string) => ({
  user: `system:serviceaccount:${defaultNamespace}:${name}`,
  groups: ['system:serviceaccounts', `system:serviceaccounts:${defaultNamespace}`],
});

/**
 * The users of a cluster's API server besides its admin (a token auth file, kube-apiserver's format):
 * the chart's controller ServiceAccount, and each peer's (`strait-peer-<peer>`, what the peer's
 * controller uses here). Tokens by identity, for the kubeconfigs. The agents' tokens are bound to their
 * nodes, issued once the chart made their ServiceAccount (agentTokens).
 */
function writeUsers(topology: LabTopology, runDir: string, cluster: string): Map<string, string> {
  const accounts = [`${labRelease}-controller`, ...peersOf(topology, cluster).map(peerSecretName)];
  const tokens = new Map(accounts.map((a) => [a, newToken()]));
  const lines = accounts.map((a) => {
    const { user, groups } = serviceAccountUser(a);
    return `${tokens.get(a)},${user},${randomBytes(8).toString('hex')},"${groups.join(',')}"`;
  });
  writeFileAtomic(join(runDir, runDirPaths.apiServerUsers(cluster)), `${lines.join('\n')}\n`, 0o600);
  return tokens;
}

/** The server and CA of a cluster's API server, from the admin kubeconfig it wrote. */
function serverOf(runDir: string, cluster: string): { server: string; ca: string } {
  const { server, caData } = clusterKubeConfig(runDir, cluster).getCurrentCluster()!;
  return { server, ca: Buffer.from(caData ?? '', 'base64').toString() };
}

/**
 * Starts the etcd of each cluster (together: each takes a second to elect itself), and notes its client URL.
 * The etcds and API servers run unsupervised (processes.ts): they stand in for a cluster's control plane,
 * and a test that crashes one starts it again itself (restartApiServer).
 */
async function startEtcds(topology: LabTopology, runDir: string): Promise<void> {
  await Promise.all(
    topology.clusters.map(async (cluster) => {
      const member = await newMember(cluster.id, join(runDir, runDirPaths.etcdData(cluster.id)));
      const pid = startProcess(runDir, `etcd-${cluster.id}`, etcdCommand(member));
      await waitUntilHealthy(clientUrl(member), () => isAlive(pid)).catch((err: Error) => {
        throw new StateError(`${err.message}; see ${join(runDir, 'logs', `etcd-${cluster.id}.log`)}`);
      });
      writeFileAtomic(join(runDir, runDirPaths.etcdUrl(cluster.id)), `${clientUrl(member)}\n`);
    }),
  );
}

/** The API server's identity, made once: its serving certificate and its ServiceAccount signing key. */
function writeIdentity(runDir: string, cluster: string): void {
  const { cert, key } = selfSignedCertificate('strait-lab-apiserver', ['127.0.0.1'], ['localhost']);
  writeFileAtomic(join(runDir, runDirPaths.apiServerCertificate(cluster)), cert);
  writeFileAtomic(join(runDir, runDirPaths.apiServerCertificateKey(cluster)), key, 0o600);
  writeFileAtomic(join(runDir, runDirPaths.serviceAccountKey(cluster)), randomBytes(32).toString('hex'), 0o600);
}

/** Starts the API server of `cluster` on its etcd and identity, listening on `port` (0: any free one). */
function startApiServer(runDir: string, cluster: string, labCli: string, port: number): void {
  const path = (relative: string) => join(runDir, relative);
  startProcess(runDir, `apiserver-${cluster}`, [
    process.execPath,
    labCli,
    'apiserver',
    '--listen',
    `127.0.0.1:${port}`,
    '--token-file',
    tokenPath(runDir, cluster),
    '--token-auth-file',
    path(runDirPaths.apiServerUsers(cluster)),
    '--kubeconfig',
    kubeconfigPath(runDir, cluster),
    '--cluster',
    cluster,
    '--etcd-servers',
    readFileSync(path(runDirPaths.etcdUrl(cluster)), 'utf8').trim(),
    '--tls-cert-file',
    path(runDirPaths.apiServerCertificate(cluster)),
    '--tls-private-key-file',
    path(runDirPaths.apiServerCertificateKey(cluster)),
    '--service-account-key-file',
    path(runDirPaths.serviceAccountKey(cluster)),
  ]);
}

/** Resolves once the API server of each of `clusters` has written its kubeconfig (it listens). */
async function serving(runDir: string, clusters: string[]): Promise<void> {
  for (const deadline = Date.now() + 30_000; ; await sleep(100)) {
    const missing = clusters.filter((c) => !existsSync(kubeconfigPath(runDir, c)));
    if (missing.length === 0) return;
    if (Date.now() > deadline)
      throw new StateError(`the API servers of ${missing.join(', ')} did not start in 30 s; see ${join(runDir, 'logs')}`);
  }
}

/** Starts each cluster's etcd and API server, waits until every one serves; returns each cluster's user tokens. */
async function startApiServers(topology: LabTopology, runDir: string, labCli: string): Promise<Map<string, Map<string, string>>> {
  const users = new Map<string, Map<string, string>>();
  for (const cluster of topology.clusters) mkdirSync(join(runDir, cluster.id), { recursive: true });
  await startEtcds(topology, runDir);
  for (const cluster of topology.clusters) {
    writeFileAtomic(tokenPath(runDir, cluster.id), `${newToken()}\n`, 0o600);
    users.set(cluster.id, writeUsers(topology, runDir, cluster.id));
    writeIdentity(runDir, cluster.id);
    startApiServer(runDir, cluster.id, labCli, 0);
  }
  await serving(
    runDir,
    topology.clusters.map((c) => c.id),
  );
  return users;
}

/**
 * Kills the API server of `cluster` (SIGKILL, as a crash) and starts it again on the same port, etcd and
 * identity: its clients reconnect to the same server, which serves the objects etcd kept.
 */
export async function restartApiServer(runDir: string, cluster: string, labCli: string): Promise<void> {
  const port = Number(new URL(serverOf(runDir, cluster).server).port);
  await stopProcess(runDir, `apiserver-${cluster}`, 0);
  rmSync(kubeconfigPath(runDir, cluster), { force: true });
  startApiServer(runDir, cluster, labCli, port);
  await serving(runDir, [cluster]);
}

/** A lab node as the kubelet would register it. */
type LabNode = Pick<LabCluster['nodes'][number], 'name' | 'podCIDR' | 'secondaryPodCIDR' | 'underlayAddress'> & { publicAddress?: string };

/** A Node as a kubelet registers it: with its status (InternalIP, Ready) in the same request. */
function nodeObject(node: LabNode): V1Node {
  return {
    metadata: {
      name: node.name,
      labels: { [gatewayCandidateLabel]: 'true', 'kubernetes.io/hostname': node.name },
      ...(node.publicAddress ? { annotations: { [publicAddressAnnotation]: node.publicAddress } } : {}),
    },
    spec: { podCIDR: node.podCIDR, podCIDRs: [node.podCIDR, ...(node.secondaryPodCIDR ? [node.secondaryPodCIDR] : [])] },
    status: {
      addresses: [
        { type: 'InternalIP', address: node.underlayAddress },
        { type: 'Hostname', address: node.name },
      ],
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          message: 'the lab node is up',
          lastTransitionTime: new Date(),
          lastHeartbeatTime: new Date(),
        },
      ],
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
      body: {
        metadata: { name: peerSecretName(peer) },
        type: 'Opaque',
        data: { [peerKubeconfigKey]: Buffer.from(kubeconfig).toString('base64') },
      },
    });
  }
}

/**
 * API servers up and seeded, a kubeconfig per Strait identity written; the controllers and agents are
 * started next. The Secret a cluster holds for a peer is a kubeconfig of the peer's API server with the
 * token of `strait-peer-<this cluster>` there, as a person would make it (docs/helm.md, Peers).
 */
export async function prepareKubernetes(topology: LabTopology, runDir: string, labCli: string): Promise<void> {
  const users = await startApiServers(topology, runDir, labCli);
  const kubeconfig = (cluster: string, account: string) => {
    const { server, ca } = serverOf(runDir, cluster);
    return { name: cluster, server, ca, token: users.get(cluster)!.get(account)! };
  };
  for (const cluster of topology.clusters) {
    writeKubeconfig(identityKubeconfigPath(runDir, cluster.id, 'controller'), [kubeconfig(cluster.id, `${labRelease}-controller`)]);
    const peers = peersOf(topology, cluster.id).map(
      (peer) => [peer, kubeconfigText([kubeconfig(peer, peerSecretName(cluster.id))])] as const,
    );
    await seedCluster(clusterKubeConfig(runDir, cluster.id), cluster.nodes, new Map(peers));
  }
}

/**
 * The ConfigMap's keys as files in the cluster's config directory, each written whole (temp file and
 * rename), as the kubelet updates a ConfigMap volume. Returns the directory.
 */
async function writeConfigFromApi(kubeConfig: KubeConfig, runDir: string, cluster: string): Promise<string> {
  const configMap = await kubeConfig.makeApiClient(CoreV1Api).readNamespacedConfigMap({ name: labConfigMap, namespace: defaultNamespace });
  const dir = labConfigDir(runDir, cluster);
  mkdirSync(dir, { recursive: true });
  for (const [key, text] of Object.entries(configMap.data ?? {})) {
    writeFileAtomic(join(dir, key), text);
  }
  return dir;
}

/** Outlives any lab run: the lab does not rotate them, as a kubelet rotates a projected token (hourly). */
const agentTokenSeconds = 7 * 24 * 3600;

/**
 * A kubeconfig per node for its agent, with a token of the chart's agent ServiceAccount bound to the
 * Node (`kubectl create token --bound-object-kind Node`): its user carries
 * `authentication.kubernetes.io/node-name`, as a DaemonSet Pod's token does, which the chart's admission
 * policy lets the agent write its own node's objects by.
 */
async function agentTokens(runDir: string, cluster: string, nodes: readonly string[]): Promise<void> {
  const core = clusterKubeConfig(runDir, cluster).makeApiClient(CoreV1Api);
  const { server, ca } = serverOf(runDir, cluster);
  for (const node of nodes) {
    const request = await core.createNamespacedServiceAccountToken({
      name: `${labRelease}-agent`,
      namespace: defaultNamespace,
      body: {
        spec: { audiences: [], expirationSeconds: agentTokenSeconds, boundObjectRef: { apiVersion: 'v1', kind: 'Node', name: node } },
      },
    });
    writeKubeconfig(identityKubeconfigPath(runDir, cluster, `agent-${node}`), [
      { name: cluster, server, ca, token: request.status!.token },
    ]);
  }
}

/**
 * The chart installed (or upgraded) in the cluster with the lab's settings, and a token for each node's
 * agent; returns the config directory.
 */
export async function installStrait(
  runDir: string,
  cluster: string,
  settings: LabChartSettings,
  nodes: readonly string[],
): Promise<string> {
  await installChart(runDir, cluster, labChartValues(settings));
  await agentTokens(runDir, cluster, nodes);
  return writeConfigFromApi(clusterKubeConfig(runDir, cluster), runDir, cluster);
}

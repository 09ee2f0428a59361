/**
 * The leader's work on Kubernetes, the imperative shell around reconcile(): informers on what it reads
 * (Nodes, the StraitGateway, NodeDataplanes, TunnelEndpoints, the NetworkConfigs peers put here, our
 * NetworkConfig in each peer's API server, each peer's Secret holding its kubeconfig), one work-queue
 * key for the whole cluster (a reconcile is cheap and never races itself), and the writes: the IPAM
 * objects first (an allocation is durable before anything names it), then the StraitGateway (a peer's
 * gateway is there before a NodeDataplane names the peer), NodeDataplanes and TunnelEndpoints, our
 * NetworkConfigs into the peers, our answers as their status here.
 *
 * A write that fails (409 on a stale read, a peer unreachable) fails the reconcile; the queue retries it
 * with backoff, and every informer change queues it again. Problems with inputs (a Node left out, a peer
 * without a kubeconfig) are Events and log lines, not failures: the rest of the cluster goes on.
 */
import { isDeepStrictEqual } from 'node:util';
import { CoreV1Api, CustomObjectsApi, type KubeConfig, type KubernetesObject, type V1Node, type V1Secret } from '@kubernetes/client-node';
import type { ControllerConfig } from '../../api/controller-config';
import { type NodeDataplaneStatus, readNodeDataplaneStatus } from '../../api/node-dataplane';
import { networkConfigNames, nodeDataplaneNames, straitGatewayNames, tunnelEndpointNames } from '../../api/resource-names';
import { parseFamilies } from '../../api/home-networks';
import type { IpamPlanes } from '../../network-ipam/planes';
import type { Cidr } from '../../net/cidr';
import { clusterNodes } from '../../k8s/cluster-nodes';
import { apiErrorText } from '../../k8s/api-errors';
import { Informer } from '../../k8s/informer';
import { nodeInformer } from '../../k8s/node-fields';
import { straitInformer } from '../../k8s/strait-informer';
import { kubeConfigFromText } from '../../k8s/kubeconfig';
import { WorkQueue } from '../../k8s/workqueue';
import type { Logger } from '../../log';
import type { ControllerMetrics } from '../../metrics/controller-metrics';
import type { ApiIpamStore } from './ipam-store';
import type { GatewayTenure } from '../election';
import { type ReconcileResult, reconcile } from '../reconcile';
import type { EventRecorder, EventSubject, Occurrence } from './events';
import { peerKubeconfigKey, peerSecretName } from '../../k8s/names';
import { nodeHeartbeats } from './heartbeats';
import {
  type KubeObject,
  type ObjectWrite,
  type OursInPeer,
  answerStatuses,
  exchangeFromObjects,
  localObjects,
  networkConfigName,
  objectWrites,
  ownedBy,
  peerNetworkConfigs,
  tunnelsByPeer,
} from './objects';
import { StraitObjects, type WrittenObject } from './object-client';
import { UnseenWrites } from './unseen-writes';
import { type PeerApiState, nextPeerApiState, peerApiState } from './peer-api';
import { type Condition, type ConditionValue, setConditions } from '../../api/conditions';
import { peeringConditions } from '../peering-conditions';
import type { ExchangeView } from '../exchange-view';

const clusterKey = 'cluster';
/** How long a reconcile waits for the informers to show our own writes: an event takes milliseconds. */
const unseenWritesTimeoutMs = 1_000;

type StraitObject = KubeObject & KubernetesObject;
const straitObjects = (kubeConfig: KubeConfig, plural: string, options: { fieldSelector?: string; log?: Logger } = {}) =>
  straitInformer<StraitObject>(kubeConfig, plural, options);

/** A peer's API server: our NetworkConfig there, read by an informer, written by `objects`. */
interface PeerLink {
  kubeconfig: string;
  ours: Informer<KubeObject & KubernetesObject>;
  objects: StraitObjects;
  /** What the last check of its API server found (peer-api.ts); none before the first. */
  api?: PeerApiState;
}

/** How often the leader checks that each peer's API server still takes our credentials. */
const defaultPeerCheckIntervalMs = 30_000;

export interface ClusterSyncOptions {
  /** `nodes` is filled from the Node objects at every reconcile. */
  config: ControllerConfig;
  kubeConfig: KubeConfig;
  namespace: string;
  ipamStore: ApiIpamStore;
  events: EventRecorder;
  log: Logger;
  /** Told of every reconcile. */
  metrics?: ControllerMetrics;
  /** How often each peer's API server is checked (defaultPeerCheckIntervalMs). */
  peerCheckIntervalMs?: number;
}

export class ClusterSync {
  private readonly nodes: Informer<V1Node>;
  /** Each configured peer's Secret, by peer: read by name, as the chart's Role grants (no other Secret). */
  private readonly secrets: Map<string, Informer<V1Secret>>;
  /** The uids of objects we wrote, by `Kind/name`, for Events about them before the informers show them. */
  private readonly writtenUids = new Map<string, string>();
  private readonly gateways: Informer<KubeObject & KubernetesObject>;
  private readonly nodeDataplanes: Informer<KubeObject & KubernetesObject>;
  private readonly tunnelEndpoints: Informer<KubeObject & KubernetesObject>;
  private readonly networkConfigs: Informer<KubeObject & KubernetesObject>;
  private readonly writers: {
    gateways: StraitObjects;
    nodeDataplanes: StraitObjects;
    tunnelEndpoints: StraitObjects;
    networkConfigs: StraitObjects;
  };
  private readonly peers = new Map<string, PeerLink>();
  private readonly queue: WorkQueue;
  private readonly unseen = new UnseenWrites(unseenWritesTimeoutMs);
  private timer: NodeJS.Timeout | undefined;
  private peerCheckTimer: NodeJS.Timeout | undefined;
  private ipam: IpamPlanes | undefined;
  /** When this controller's election last named a new gateway, written to the NodeDataplanes. */
  private last: ReconcileResult | undefined;
  private startedAt = Date.now();
  private stopped = false;
  /** The cluster's PodCIDRs, the primary family's first. */
  private readonly podCIDRs: Cidr[];

  constructor(private readonly options: ClusterSyncOptions) {
    const { kubeConfig, namespace, log } = options;
    this.podCIDRs = parseFamilies(options.config.home).map((family) => family.podCIDR);
    const core = kubeConfig.makeApiClient(CoreV1Api);
    this.nodes = nodeInformer(kubeConfig, log);
    this.secrets = new Map(
      options.config.peers.map((peer) => {
        const fieldSelector = `metadata.name=${peerSecretName(peer)}`;
        return [
          peer,
          new Informer<V1Secret>({
            kubeConfig,
            path: `/api/v1/namespaces/${namespace}/secrets`,
            fieldSelector,
            list: (page) => core.listNamespacedSecret({ namespace, fieldSelector, ...page }),
            log,
          }),
        ];
      }),
    );
    this.gateways = straitObjects(kubeConfig, straitGatewayNames.plural, {
      fieldSelector: `metadata.name=${options.config.clusterId}`,
      log,
    });
    this.nodeDataplanes = straitObjects(kubeConfig, nodeDataplaneNames.plural, { log });
    this.tunnelEndpoints = straitObjects(kubeConfig, tunnelEndpointNames.plural, { log });
    this.networkConfigs = straitObjects(kubeConfig, networkConfigNames.plural, { log });
    const custom = kubeConfig.makeApiClient(CustomObjectsApi);
    this.writers = {
      gateways: new StraitObjects(custom, straitGatewayNames),
      nodeDataplanes: new StraitObjects(custom, nodeDataplaneNames),
      tunnelEndpoints: new StraitObjects(custom, tunnelEndpointNames),
      networkConfigs: new StraitObjects(custom, networkConfigNames),
    };
    this.queue = new WorkQueue(() => this.timedSync(), {
      maxDelay: 5_000,
      onError: (_key, err, failures, retryIn) => {
        if (failures === 1 || failures % 10 === 0)
          log.warn({ error: err instanceof Error ? err.message : String(err), failures, retryInMs: retryIn }, 'reconcile failed; retrying');
      },
    });
  }

  private get local(): Informer<KubernetesObject>[] {
    return [
      this.nodes,
      ...this.secrets.values(),
      this.gateways,
      this.nodeDataplanes,
      this.tunnelEndpoints,
      this.networkConfigs,
    ] as Informer<KubernetesObject>[];
  }

  /** Fills the caches and the IPAM state, adopts the gateway the StraitGateway names, then reconciles on every change. */
  async start(): Promise<void> {
    const { log, config } = this.options;
    for (const informer of this.local) informer.onChange(() => this.queue.add(clusterKey));
    await Promise.all(this.local.map((i) => i.start()));
    this.ipam = await this.loadIpam();
    if (this.stopped) return; // lost the lead while filling the caches
    this.startedAt = Date.now();
    log.info({ clusterId: config.clusterId, peers: config.peers, nodes: this.nodes.list().length }, 'leading: caches filled');
    // Time decides too (a gateway settling, the start-up grace): reconcile at the interval even when nothing was written.
    this.timer = setInterval(() => this.queue.add(clusterKey), config.interval * 1000);
    this.peerCheckTimer = setInterval(() => void this.checkPeers(), this.options.peerCheckIntervalMs ?? defaultPeerCheckIntervalMs);
    this.queue.add(clusterKey);
  }

  /** Reads our NetworkConfig in each peer's API server: credentials that stopped working show before a change needs them. */
  private async checkPeers(): Promise<void> {
    for (const [peer, link] of this.peers) await this.checkPeer(peer, link);
  }

  private async checkPeer(peer: string, link: PeerLink): Promise<void> {
    let error: unknown;
    try {
      await link.objects.read(networkConfigName(this.options.config.clusterId, peer));
    } catch (err) {
      error = err;
    }
    if (this.peers.get(peer) === link) this.observePeerApi(peer, link, error);
  }

  /** Keeps what a check or a write found of a peer's API server; a change is logged, recorded and reconciled (its problem). */
  private observePeerApi(peer: string, link: PeerLink, error: unknown): void {
    const { namespace, log, metrics } = this.options;
    const previous = link.api;
    link.api = nextPeerApiState(previous, peerApiState(error, peer, `${namespace}/${peerSecretName(peer)}`, Date.now()));
    metrics?.peerApi(peer, link.api.ok);
    if (link.api === previous || (previous === undefined && link.api.ok)) return;
    const { ok, reason, message } = link.api;
    if (ok) log.info({ peer }, message);
    else log.warn({ peer, reason }, message);
    this.record(
      { kind: tunnelEndpointNames.kind, name: peer },
      { type: ok ? 'Normal' : 'Warning', reason: ok ? 'PeerApiReachable' : `PeerApi${reason}`, action: 'CheckPeerApi', note: message },
    );
    this.queue.add(clusterKey);
  }

  /**
   * Stops reconciling. With `withdraw` (the release is uninstalled), our NetworkConfig in each peer's API
   * server goes once no reconcile can write it again: the uninstall cannot reach those, and each peer's
   * controller then ends the peering as it does when we end it. A peer that cannot be reached keeps it,
   * which its own controller shows. Returns the peers withdrawn from.
   */
  async stop(options: { withdraw?: boolean } = {}): Promise<string[]> {
    this.stopped = true;
    clearInterval(this.timer);
    clearInterval(this.peerCheckTimer);
    await this.queue.shutDown();
    const withdrawn: string[] = [];
    for (const [peer, link] of options.withdraw ? this.peers : []) {
      try {
        await link.objects.apply(objectWrites([], link.ours.list(), this.options.config.clusterId).writes);
        withdrawn.push(peer);
      } catch (err) {
        this.options.log.warn({ peer, error: apiErrorText(err) }, 'cannot withdraw our NetworkConfig from the peer');
      }
    }
    await Promise.all([...this.local, ...[...this.peers.values()].map((p) => p.ours)].map((i) => i.stop()));
    this.peers.clear();
    return withdrawn;
  }

  /** The IPAM state from its objects; what could not be used is named (the next save replaces it). */
  private async loadIpam(): Promise<IpamPlanes | undefined> {
    const { ipamStore, config } = this.options;
    const state = await ipamStore.load();
    for (const problem of ipamStore.dropped) {
      this.options.log.warn({ problem }, 'IPAM object left out');
      this.record(
        { kind: 'ClusterNetworks', name: config.clusterId },
        { type: 'Warning', reason: 'IpamObjectRejected', action: 'LoadIpam', note: problem },
      );
    }
    return state;
  }

  /**
   * The gateway the controller before us chose, kept while it is Ready: the StraitGateway's, or, from a
   * controller that named it in every NodeDataplane (before the StraitGateway), theirs: an upgrade keeps it.
   */
  private adoptedGateway(): GatewayTenure | undefined {
    const named = (object: KubeObject | undefined) =>
      (object?.spec as { activeGateway?: { name?: unknown } } | undefined)?.activeGateway?.name;
    const name = [this.gateways.get(this.options.config.clusterId), ...this.nodeDataplanes.list()]
      .map(named)
      .find((n) => typeof n === 'string');
    return typeof name === 'string' ? { gateway: name } : undefined;
  }

  /**
   * Our link to each configured peer's API server, from its Secret (one without a Secret waits, a problem
   * says why). A former peer's is not read: the peer deletes our offer in its API server when it ends
   * the peering too, as we delete its offer here.
   */
  private async linkPeers(problems: string[]): Promise<void> {
    const { config, namespace, log } = this.options;
    for (const peer of config.peers) {
      const secret = this.secrets.get(peer)?.get(`${namespace}/${peerSecretName(peer)}`);
      const encoded = secret?.data?.[peerKubeconfigKey];
      const kubeconfig = encoded === undefined ? undefined : Buffer.from(encoded, 'base64').toString('utf8');
      const link = this.peers.get(peer);
      if (link && link.kubeconfig === kubeconfig) continue;
      if (link) {
        await link.ours.stop();
        this.peers.delete(peer);
      }
      if (kubeconfig === undefined) {
        problems.push(
          `peer ${peer}: no kubeconfig of its API server (Secret ${namespace}/${peerSecretName(peer)}, key ${peerKubeconfigKey})`,
        );
        continue;
      }
      let peerConfig: KubeConfig;
      try {
        peerConfig = kubeConfigFromText(kubeconfig);
      } catch (err) {
        problems.push(`peer ${peer}: Secret ${namespace}/${peerSecretName(peer)}: ${(err as Error).message}`);
        continue;
      }
      const ours = straitObjects(peerConfig, networkConfigNames.plural, {
        fieldSelector: `metadata.name=${networkConfigName(config.clusterId, peer)}`,
        log: log.child({ peer }),
      });
      ours.onChange(() => this.queue.add(clusterKey));
      void ours.start();
      this.peers.set(peer, {
        kubeconfig,
        ours,
        objects: new StraitObjects(peerConfig.makeApiClient(CustomObjectsApi), networkConfigNames),
        // New credentials are judged against what the old ones met: checked at once, they say if they mend it.
        ...(link?.api ? { api: link.api } : {}),
      });
      void this.checkPeer(peer, this.peers.get(peer)!);
    }
  }

  /** A reconcile, told to the metrics; a failure goes on to the queue's retry. */
  private async timedSync(): Promise<void> {
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    try {
      const done = await this.sync();
      if (done) this.options.metrics?.reconciled(done.result, done.previousGateway, seconds());
    } catch (err) {
      this.options.metrics?.failed(seconds(), err instanceof Error ? err.message : String(err));
      throw err;
    }
  }

  /**
   * One reconcile: read the caches, decide, write the difference. Returns what it decided and from which
   * gateway; undefined when it waited (no gateway candidate).
   */
  private async sync(): Promise<{ result: ReconcileResult; previousGateway: string | undefined } | undefined> {
    const { config, log } = this.options;
    // Planned from caches that have not seen our last writes, a reconcile would make them again. Their
    // events queue the next one.
    if (!this.unseen.allSeen()) return;
    const now = Date.now();
    const problems: string[] = [];
    await this.linkPeers(problems);
    for (const [peer, link] of this.peers) {
      if (link.api?.ok === false) problems.push(`peer ${peer}: ${link.api.message} (since ${new Date(link.api.since).toISOString()})`);
    }

    const read = clusterNodes(this.nodes.list(), this.podCIDRs, config.gatewayNodeSelector);
    for (const p of read.problems)
      this.record(
        { kind: 'Node', name: p.node, apiVersion: 'v1' },
        { type: 'Warning', reason: 'NodeNotUsable', action: 'ReadNode', note: p.message },
      );
    const nodes = read.nodes.map((n) => n.config);
    if (!nodes.some((n) => n.gatewayCandidate)) {
      log.warn(
        { nodes: nodes.map((n) => n.name), gatewayNodeSelector: config.gatewayNodeSelector },
        'no usable Node is a gateway candidate (its labels must match gatewayNodeSelector); waiting',
      );
      return undefined;
    }

    const statuses = new Map<string, NodeDataplaneStatus | undefined>();
    for (const object of this.nodeDataplanes.list()) {
      try {
        statuses.set(object.metadata.name, object.status === undefined ? undefined : readNodeDataplaneStatus(object.status));
      } catch {
        statuses.set(object.metadata.name, undefined); // a status we cannot read says nothing
      }
    }
    // Liveness without a write at rest: the Nodes' Ready conditions, the agents' statuses and, for the
    // gateway candidates, what their probes of each other found (heartbeats.ts).
    const heartbeats = nodeHeartbeats(
      read.nodes.map((n) => ({ name: n.config.name, nodeReady: n.ready })),
      statuses,
      now,
    );

    const ours = new Map<string, OursInPeer>();
    for (const peer of config.peers) {
      const link = this.peers.get(peer);
      ours.set(peer, link?.ours.synced ? link.ours.get(networkConfigName(config.clusterId, peer)) : 'unread');
    }
    const exchange = exchangeFromObjects(this.networkConfigs.list(), ours, config.clusterId, this.ipam);
    exchange.problems.push(...problems);

    const previous = this.last?.election ?? this.adoptedGateway();
    const result = reconcile({
      config: { ...config, nodes },
      ipam: this.ipam,
      exchange,
      heartbeats,
      previous,
      now,
      startedAt: this.startedAt,
    });

    // The allocation is durable before any object names it. A write refused on a stale read (another
    // writer, or objects changed by hand) means: read the objects again, and decide again.
    if (result.ipam !== this.ipam) {
      try {
        await this.options.ipamStore.save(result.ipam);
      } catch (err) {
        this.ipam = await this.loadIpam();
        throw err;
      }
    }
    this.ipam = result.ipam;

    const wanted = localObjects(result, config.clusterId);
    const gw = objectWrites(wanted.gateways, this.gateways.list(), config.clusterId);
    const nd = objectWrites(wanted.nodeDataplanes, this.nodeDataplanes.list(), config.clusterId);
    const te = objectWrites(wanted.tunnelEndpoints, this.tunnelEndpoints.list(), config.clusterId);
    await this.writers.gateways.apply(gw.writes, (w, o) => this.wrote(this.gateways, straitGatewayNames.kind, w, o));
    await this.writers.nodeDataplanes.apply(nd.writes, (w, o) => this.wrote(this.nodeDataplanes, nodeDataplaneNames.kind, w, o));
    await this.writers.tunnelEndpoints.apply(te.writes, (w, o) => this.wrote(this.tunnelEndpoints, tunnelEndpointNames.kind, w, o));
    // Our NetworkConfig into each peer's API server.
    const offers = peerNetworkConfigs(result, config.clusterId);
    for (const [peer, link] of this.peers) {
      if (!link.ours.synced) continue;
      const name = networkConfigName(config.clusterId, peer);
      const existing = link.ours.get(name);
      const wanted = offers.get(peer);
      try {
        await link.objects.apply(objectWrites(wanted ? [wanted] : [], existing ? [existing] : [], config.clusterId).writes, (w, o) =>
          this.unseen.wrote(link.ours, w, o?.resourceVersion),
        );
      } catch (err) {
        this.observePeerApi(peer, link, err);
        throw err;
      }
    }
    // A former peer's offer here: its access to our API server went with the peering (the chart binds
    // strait-peer-<id> only for configured peers), so it cannot take the offer back itself; we do.
    for (const object of this.networkConfigs.list()) {
      const owner = (object.spec as { clusterId?: unknown } | undefined)?.clusterId;
      if (typeof owner !== 'string' || owner === config.clusterId || config.peers.includes(owner)) continue;
      await this.writers.networkConfigs.apply(objectWrites([], [object], owner).writes, (w, o) =>
        this.unseen.wrote(this.networkConfigs, w, o?.resourceVersion),
      );
    }
    for (const [name, status] of answerStatuses(result, config.clusterId)) {
      const current = this.networkConfigs.get(name);
      if (current && !isDeepStrictEqual(current.status, status)) await this.writers.networkConfigs.patchStatus(name, status);
    }
    await this.writePeeringConditions(result, exchange);
    this.report(result, [...gw.conflicts, ...nd.conflicts, ...te.conflicts]);
    this.last = result;
    return { result, previousGateway: previous?.gateway };
  }

  /**
   * Each peering's conditions on its TunnelEndpoint, written when they differ from what is there (a
   * TunnelEndpoint just created gets them at the reconcile its informer event queues).
   */
  private async writePeeringConditions(result: ReconcileResult, exchange: ExchangeView): Promise<void> {
    const now = new Date().toISOString();
    const gateway = { name: result.election.gateway, ready: result.status.readyNodes.includes(result.election.gateway) };
    const tunnels = tunnelsByPeer(result);
    for (const { clusterId: peer, state, reason } of result.status.peers) {
      const current = this.tunnelEndpoints.get(peer);
      if (!current || !ownedBy(current, this.options.config.clusterId)) continue; // not ours: a conflict, reported
      const tunnel = tunnels.get(peer);
      const theirs = exchange.specsForUs.get(peer);
      const api = this.peers.get(peer)?.api;
      const previous = (current.status as { conditions?: Condition[] } | undefined)?.conditions ?? [];
      const values = peeringConditions({
        peer,
        previous,
        state,
        ...(reason !== undefined ? { reason } : {}),
        ...(tunnel ? { tunnel } : {}),
        ...(theirs ? { theirs } : {}),
        ...(api ? { api } : {}),
        home: result.ipam,
        gateway,
      });
      const generation = current.metadata?.generation;
      const observed = (c: ConditionValue) => (generation === undefined ? c : { ...c, observedGeneration: generation });
      const status = { conditions: setConditions(previous, values.map(observed), now) };
      if (!isDeepStrictEqual(current.status, status)) await this.writers.tunnelEndpoints.patchStatus(peer, status);
    }
  }

  /** A write of ours done: awaited in the informer's cache, and its uid kept until the cache has it. */
  private wrote(cache: Informer<StraitObject>, kind: string, write: ObjectWrite, object?: WrittenObject): void {
    this.unseen.wrote(cache, write, object?.resourceVersion);
    const key = `${kind}/${write.op === 'delete' ? write.name : write.object.metadata.name}`;
    if (object?.uid) this.writtenUids.set(key, object.uid);
    else this.writtenUids.delete(key);
  }

  /**
   * Records an Event about `subject` with its uid (`kubectl describe` matches on it): from an informer's
   * cache, or from the answer to our write of it when the cache has not shown it yet.
   */
  private record(subject: EventSubject, occurrence: Occurrence): void {
    const caches: Record<string, Informer<KubernetesObject>> = {
      Node: this.nodes,
      [straitGatewayNames.kind]: this.gateways,
      [nodeDataplaneNames.kind]: this.nodeDataplanes,
      [tunnelEndpointNames.kind]: this.tunnelEndpoints,
      [networkConfigNames.kind]: this.networkConfigs,
    };
    const uid = caches[subject.kind]?.get(subject.name)?.metadata?.uid ?? this.writtenUids.get(`${subject.kind}/${subject.name}`);
    this.options.events.record(uid ? { ...subject, uid } : subject, occurrence);
  }

  /** Events and log lines for what changed since the last reconcile. */
  private report(result: ReconcileResult, conflicts: string[]): void {
    const { log } = this.options;
    const before = this.last;
    const { gateway, reason } = result.election;
    if (before?.election.gateway !== gateway) {
      log.info(
        { gateway, previous: before?.election.gateway ?? null, reason, readyNodes: result.status.readyNodes },
        before ? 'gateway changed' : 'gateway elected',
      );
      this.record(
        { kind: straitGatewayNames.kind, name: this.options.config.clusterId },
        {
          type: 'Normal',
          reason: before ? 'GatewayMoved' : 'GatewayElected',
          action: 'ElectGateway',
          note: `${gateway} is the gateway (${reason})${before ? `, was ${before.election.gateway}` : ''}`,
        },
      );
    }
    for (const peer of result.status.peers) {
      const previous = before?.status.peers.find((p) => p.clusterId === peer.clusterId)?.state;
      if (previous === peer.state) continue;
      log.info(
        { peer: peer.clusterId, state: peer.state, previous: previous ?? null, ...(peer.reason ? { reason: peer.reason } : {}) },
        `peer ${peer.state}`,
      );
      if (peer.state === 'ready')
        this.record(
          { kind: tunnelEndpointNames.kind, name: peer.clusterId },
          { type: 'Normal', reason: 'PeerReady', action: 'Peer', note: `peering with ${peer.clusterId} is ready` },
        );
      if (peer.state === 'refused')
        this.record(
          { kind: networkConfigNames.kind, name: networkConfigName(peer.clusterId, this.options.config.clusterId) },
          { type: 'Warning', reason: 'PeerRefused', action: 'Peer', note: peer.reason ?? '' },
        );
    }
    for (const problem of [...result.problems, ...conflicts]) {
      if (!before?.problems.includes(problem)) log.warn({ problem }, 'input not usable yet');
    }
  }
}

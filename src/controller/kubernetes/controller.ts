/**
 * The controller on Kubernetes (a Deployment of two replicas): each replica campaigns for the Lease
 * `strait-controller` in its namespace; the leader runs a ClusterSync, the standby only watches the
 * Lease. When the leader stops cleanly it releases the Lease and the standby leads at its next attempt;
 * when it dies, after the lease duration. A new leader adopts what is written (IPAM objects, the gateway
 * named by the NodeDataplanes), so a change of leader changes nothing in any dataplane.
 */
import { CoordinationV1Api, CustomObjectsApi, EventsV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { ControllerConfig } from '../../api/controller-config';
import { ApiIpamStore } from './ipam-store';
import { describeKubeConfig } from '../../k8s/kubeconfig';
import { LeaderElector } from '../../k8s/leader-elector';
import { controllerLeaseName } from '../../k8s/names';
import { type LeaseTimings, clientGoLeaseTimings } from '../../k8s/lease-decision';
import type { Logger } from '../../log';
import type { ControllerMetrics } from '../../metrics/controller-metrics';
import { ClusterSync } from './cluster-sync';
import { EventRecorder } from './events';
import { WorkloadWatch } from '../../k8s/workload-watch';

/** Who writes the controller's Events (their reportingController, a qualified name). */
const eventReportingController = 'strait.io/controller';

export interface KubernetesControllerOptions {
  config: ControllerConfig;
  kubeConfig: KubeConfig;
  namespace: string;
  /** Unique per replica: the Pod's name. */
  identity: string;
  leaseTimings?: LeaseTimings;
  log: Logger;
  /** Told of leadership and of every reconcile. */
  metrics?: ControllerMetrics;
  /** How often the leader checks each peer's API server (cluster-sync.ts: 30 s). */
  peerCheckIntervalMs?: number;
  /**
   * The controller's Deployment, in `namespace`: once it is deleted (`helm uninstall`), the leader's stop
   * withdraws our NetworkConfigs from the peers' API servers, which the uninstall cannot reach.
   */
  deployment?: string;
}

/** Runs until the signal aborts; a leader stops its work, then releases the Lease. */
export async function runKubernetesController(options: KubernetesControllerOptions, signal: AbortSignal): Promise<void> {
  const { config, kubeConfig, namespace, identity, log, metrics } = options;
  const events = new EventRecorder({
    api: kubeConfig.makeApiClient(EventsV1Api),
    reportingController: eventReportingController,
    reportingInstance: identity,
    log,
  });
  events.start();
  let sync: ClusterSync | undefined;
  // The Lease is the IPAM's writer lock: only the leader's store writes.
  const ipamStore = new ApiIpamStore({
    api: kubeConfig.makeApiClient(CustomObjectsApi),
    clusterId: config.clusterId,
    leading: () => elector.leading,
    log,
  });
  const elector: LeaderElector = new LeaderElector({
    ...(options.leaseTimings ?? clientGoLeaseTimings),
    api: kubeConfig.makeApiClient(CoordinationV1Api),
    namespace,
    name: controllerLeaseName,
    identity,
    log,
    onStartedLeading: () => {
      log.info({ identity }, 'started leading');
      metrics?.leading(true);
      sync = new ClusterSync({
        config,
        kubeConfig,
        namespace,
        ipamStore,
        events,
        log,
        ...(metrics ? { metrics } : {}),
        ...(options.peerCheckIntervalMs ? { peerCheckIntervalMs: options.peerCheckIntervalMs } : {}),
      });
      sync.start().catch((err: unknown) => log.error({ error: err instanceof Error ? err.message : String(err) }, 'cannot start leading'));
    },
    onStoppedLeading: async () => {
      log.info({ identity }, 'stopped leading');
      await sync?.stop();
      sync = undefined;
      metrics?.leading(false);
    },
    onNewLeader: (holder) => {
      log.info({ leader: holder }, 'following');
      metrics?.following();
    },
  });
  log.info(
    { clusterId: config.clusterId, apiServer: describeKubeConfig(kubeConfig), namespace, identity, peers: config.peers },
    'controller started',
  );
  const workload =
    options.deployment === undefined
      ? undefined
      : new WorkloadWatch({ kubeConfig, resource: 'deployments', namespace, name: options.deployment, log });
  workload?.start();
  elector.start();
  await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
  await workload?.stop();
  if (workload?.removed && sync) {
    const leading = sync;
    sync = undefined;
    const withdrawn = await leading.stop({ withdraw: true });
    log.info({ peers: withdrawn }, 'the release is uninstalled: our NetworkConfigs are withdrawn from the peers');
  }
  await elector.stop();
  await events.stop();
  log.info({ clusterId: config.clusterId }, 'controller stopped');
}

/**
 * The agent's control plane on Kubernetes (control-plane.ts): informers on its NodeDataplane and the Nodes,
 * the status subresource, with --pool-ipam-socket the node's pool IPAM service, and with --daemonset a
 * watch of the agent's DaemonSet (its deletion: the release uninstalled). No heartbeat of its own: the
 * node's liveness is its Node's Ready condition (the kubelet's) and the datapath's answers to probes.
 */
import { CustomObjectsApi } from '@kubernetes/client-node';
import { describeKubeConfig, loadKubeConfig } from '../../k8s/kubeconfig';
import type { Logger } from '../../log';
import { type PoolIpamService, startPoolIpamService } from '../../pool-ipam/service/pool-ipam-service';
import type { ControlPlane, KubernetesControlPlane } from '../control-plane-port';
import { KubernetesSpecSource } from './spec-source';
import { KubernetesStatusSink } from './status-sink';
import { WorkloadWatch } from '../../k8s/workload-watch';

/** Loads the kubeconfig at once (a bad one fails before the kernel is touched); connects on start. */
export function kubernetesControlPlane(options: KubernetesControlPlane, log: Logger): ControlPlane {
  const kubeConfig = loadKubeConfig(options.kubeconfig === undefined ? {} : { file: options.kubeconfig });
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const { nodeName, namespace } = options;
  const source = new KubernetesSpecSource({ kubeConfig, nodeName, log });
  const sink = new KubernetesStatusSink({ api: custom, nodeName, refreshMs: options.statusRefreshMs, log });
  let poolIpam: PoolIpamService | undefined;
  const daemonSet =
    options.daemonSet === undefined
      ? undefined
      : new WorkloadWatch({ kubeConfig, resource: 'daemonsets', namespace, name: options.daemonSet, log });
  return {
    ports: { source, sink, nodeName },
    where: {
      apiServer: describeKubeConfig(kubeConfig),
      node: nodeName,
      namespace,
      statusRefreshMs: options.statusRefreshMs,
      poolIpamSocket: options.poolIpam?.socket ?? null,
      daemonSet: options.daemonSet ?? null,
    },
    serve: async () => {
      if (options.poolIpam === undefined) return;
      const { socket, gcIntervalMs } = options.poolIpam;
      // Its own logger: its lines say which service they come from. Not awaited: `synced` is its readiness
      // (STATUS answers not ready until then), the datapath's is the agent's.
      poolIpam = await startPoolIpamService({
        kubeConfig,
        node: nodeName,
        socket,
        gcIntervalMs,
        log: log.child({ component: 'pool-ipam' }),
      });
    },
    start: () => {
      daemonSet?.start();
    },
    uninstalled: () => daemonSet?.removed ?? false,
    close: async () => {
      source.close();
      await daemonSet?.stop();
      await poolIpam?.stop();
      await sink.flushed();
    },
  };
}

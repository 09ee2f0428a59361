/**
 * Whether the release that runs this process is being uninstalled: its workload (the agents' DaemonSet,
 * the controller's Deployment), seen once, deleted or marked for deletion. `helm uninstall` deletes the
 * workloads before their Pods get a SIGTERM, and before the RBAC and the ServiceAccounts the processes
 * read with: the watch opened at start, already authorized, still brings the deletion (a new request
 * would be refused by then). Nothing else a cluster does deletes the workload while its Pods get a
 * SIGTERM: a rolling update, a drain or a deleted Pod keep it, so the process leaves its state for the
 * next one (hitless). A workload deleted with `--cascade=orphan` leaves its Pods running, and one created
 * again (which adopts them) counts as there.
 */
import { AppsV1Api, type KubeConfig, type KubernetesListObject, type V1DaemonSet, type V1Deployment } from '@kubernetes/client-node';
import type { Logger } from '../log';
import { Informer } from './informer';
import type { ListPage } from './pager';

type Workload = V1DaemonSet | V1Deployment;

export interface WorkloadWatchOptions {
  kubeConfig: KubeConfig;
  resource: 'daemonsets' | 'deployments';
  namespace: string;
  name: string;
  log: Logger;
}

export class WorkloadWatch {
  private readonly informer: Informer<Workload>;
  private seen = false;
  private gone = false;

  constructor(private readonly options: WorkloadWatchOptions) {
    const { kubeConfig, resource, namespace, name, log } = options;
    const apps = kubeConfig.makeApiClient(AppsV1Api);
    // By name: the chart's roles allow this workload only (resourceNames), which needs the field selector.
    const fieldSelector = `metadata.name=${name}`;
    const list = (page: ListPage): Promise<KubernetesListObject<Workload>> =>
      resource === 'daemonsets'
        ? apps.listNamespacedDaemonSet({ namespace, fieldSelector, ...page })
        : apps.listNamespacedDeployment({ namespace, fieldSelector, ...page });
    this.informer = new Informer<Workload>({
      kubeConfig,
      path: `/apis/apps/v1/namespaces/${namespace}/${resource}`,
      list,
      fieldSelector,
      log,
    });
    this.informer.onChange(() => this.observe());
  }

  private observe(): void {
    const { resource, namespace, name, log } = this.options;
    const workload = this.informer.get(`${namespace}/${name}`);
    const present = workload !== undefined && workload.metadata?.deletionTimestamp === undefined;
    if (present) this.seen = true;
    const gone = this.seen && !present;
    if (gone !== this.gone)
      log.info(
        { [resource]: `${namespace}/${name}` },
        gone ? 'our workload is deleted: the release is being uninstalled' : 'our workload is back',
      );
    this.gone = gone;
  }

  /** Not awaited: the process runs whether or not this can be read (a role without the rule: never removed). */
  start(): void {
    void this.informer.start();
  }

  /** The workload was seen and is now deleted or being deleted. */
  get removed(): boolean {
    return this.gone;
  }

  async stop(): Promise<void> {
    await this.informer.stop();
  }
}

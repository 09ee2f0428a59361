/**
 * What a node's pool IPAM service watches: the pool IPAM resources, and the Pods and Nodes garbage
 * collection judges claims by. Every collection is an informer (list, then watch); the service answers
 * CNI calls only once all are synced.
 */
import {
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import type { IPClaimSpecDocument } from '../../api/ip-claim';
import type { IPPoolSpecDocument, IPPoolStatusDocument } from '../../api/ip-pool';
import type { EndpointSpecDocument } from '../../api/pool-endpoint';
import type { ReservedIPSpecDocument } from '../../api/reserved-ip';
import { endpointNames, group, ipClaimNames, ipPoolNames, reservedIpNames, subnetNames, version } from '../../api/resource-names';
import type { SubnetSpecDocument, SubnetStatusDocument } from '../../api/subnet';
import { Informer } from '../../k8s/informer';
import { straitInformer } from '../../k8s/strait-informer';
import type { Logger } from '../../log';

type Of<Spec, Status = undefined> = KubernetesObject & { spec: Spec; status?: Status };
export type IPPoolObject = Of<IPPoolSpecDocument, IPPoolStatusDocument>;
export type SubnetObject = Of<SubnetSpecDocument, SubnetStatusDocument>;
export type ReservedIPObject = Of<ReservedIPSpecDocument>;
export type IPClaimObject = Of<IPClaimSpecDocument>;
export type EndpointObject = Of<EndpointSpecDocument>;

export class PoolIpamView {
  readonly pools: Informer<IPPoolObject>;
  readonly subnets: Informer<SubnetObject>;
  readonly reserved: Informer<ReservedIPObject>;
  readonly claims: Informer<IPClaimObject>;
  readonly endpoints: Informer<EndpointObject>;
  readonly pods: Informer<V1Pod>;
  readonly nodes: Informer<V1Node>;

  constructor(kubeConfig: KubeConfig, log?: Logger) {
    const opts = log ? { log } : {};
    this.pools = straitInformer(kubeConfig, ipPoolNames.plural, opts);
    this.subnets = straitInformer(kubeConfig, subnetNames.plural, opts);
    this.reserved = straitInformer(kubeConfig, reservedIpNames.plural, opts);
    this.claims = straitInformer(kubeConfig, ipClaimNames.plural, opts);
    const custom = kubeConfig.makeApiClient(CustomObjectsApi);
    this.endpoints = new Informer<EndpointObject>({
      kubeConfig,
      path: `/apis/${group}/${version}/${endpointNames.plural}`,
      list: (page) =>
        custom.listCustomObjectForAllNamespaces({ group, version, plural: endpointNames.plural, ...page }) as Promise<
          KubernetesListObject<EndpointObject>
        >,
      ...opts,
    });
    const core = kubeConfig.makeApiClient(CoreV1Api);
    this.pods = new Informer<V1Pod>({ kubeConfig, path: '/api/v1/pods', list: (page) => core.listPodForAllNamespaces(page), ...opts });
    this.nodes = new Informer<V1Node>({ kubeConfig, path: '/api/v1/nodes', list: (page) => core.listNode(page), ...opts });
  }

  private get all(): Informer<KubernetesObject>[] {
    return [this.pools, this.subnets, this.reserved, this.claims, this.endpoints, this.pods, this.nodes] as Informer<KubernetesObject>[];
  }

  /** Resolves when every informer has listed once. */
  async start(): Promise<void> {
    await Promise.all(this.all.map((i) => i.start()));
  }

  get synced(): boolean {
    return this.all.every((i) => i.synced);
  }

  async stop(): Promise<void> {
    await Promise.all(this.all.map((i) => i.stop()));
  }
}

/**
 * Rule 1, the subnet annotation: the application's own StraitIPPool per family, carved from the first StraitSubnet
 * named that has room. The carve is recorded in the StraitSubnet's status under its resourceVersion before the
 * pool is created (a 409: someone else recorded first; read again), so two applications never get the
 * same address and two nodes making the same application's pool agree on it (its name is a function of
 * the application; the record is found and reused).
 */
import { AppsV1Api, CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { apiVersion, group, ipPoolNames, subnetNames, version } from '../../api/resource-names';
import { apiStatus } from '../../k8s/api-errors';
import type { Logger } from '../../log';
import type { IpFamily } from '../../net/cidr';
import { applicationOf, applicationPoolName, carvePool } from '../application-pool';
import { IpamError } from '../ipam-error';
import { formatIpRanges, normalizeRanges, parseIpRanges } from '../ip-ranges';
import type { ApplicationRef, Candidates, PodContext } from '../model';
import { readSubnet } from '../pool-objects';
import { cniErrorCodes } from '../protocol';
import type { IPPoolObject, PoolIpamView, SubnetObject } from './cluster-view';
import { type ApplicationPoolRecord, type ApplicationState, applicationKey, staleApplicationPools } from '../application-pool-gc';

/** The labels an application pool carries: what it was carved from, and for which application. */
const poolLabels = {
  subnet: 'ipam.strait.io/subnet',
  kind: 'ipam.strait.io/application-kind',
  namespace: 'ipam.strait.io/application-namespace',
  name: 'ipam.strait.io/application-name',
  uid: 'ipam.strait.io/application-uid',
};

/** An application pool as application-pool-gc.ts reads it; a pool made before the namespace and uid labels reads them from its first allowed namespace and its ownerReference. */
function applicationPoolRecord(pool: IPPoolObject): ApplicationPoolRecord[] {
  const labels = pool.metadata?.labels ?? {};
  const [subnet, kind, name] = [labels[poolLabels.subnet], labels[poolLabels.kind], labels[poolLabels.name]];
  const namespace = labels[poolLabels.namespace] ?? pool.spec.namespaceName?.[0];
  const uid = labels[poolLabels.uid] ?? pool.metadata?.ownerReferences?.[0]?.uid;
  if (!subnet || !kind || !name || !namespace || !uid || !pool.metadata?.name || !pool.metadata.uid) return [];
  return [{ name: pool.metadata.name, uid: pool.metadata.uid, subnet, application: { kind, namespace, name, uid } }];
}

export class ApplicationPools {
  private readonly custom: CustomObjectsApi;
  private readonly apps: AppsV1Api;
  private readonly core: CoreV1Api;

  constructor(
    kubeConfig: KubeConfig,
    private readonly view: PoolIpamView,
    private readonly log: Logger,
  ) {
    this.custom = kubeConfig.makeApiClient(CustomObjectsApi);
    this.apps = kubeConfig.makeApiClient(AppsV1Api);
    this.core = kubeConfig.makeApiClient(CoreV1Api);
  }

  /** Makes sure each family's application pool exists (the candidates name them already). */
  async ensure(pod: PodContext, subnets: NonNullable<Candidates['subnets']>): Promise<void> {
    for (const family of [4, 6] as const) {
      const names = family === 4 ? subnets.ipv4 : subnets.ipv6;
      if (names.length === 0) continue;
      const application = await this.application(pod);
      const count = 'fixed' in subnets.ipNumber ? subnets.ipNumber.fixed : application.replicas + subnets.ipNumber.flexible;
      const made = [];
      for (const subnet of names) {
        const pool = applicationPoolName(subnet, applicationOf(pod), family, pod.ifname);
        if (this.view.pools.get(pool) || (await this.make(subnet, pool, family, count, pod, application.selector))) {
          made.push(pool);
          break;
        }
      }
      if (made.length === 0)
        throw new IpamError(
          cniErrorCodes.poolsExhausted,
          `no ${subnetNames.kind} of ${names.join(', ')} has ${count} free IPv${family} addresses for the pool of pod ${pod.namespace}/${pod.name}'s application`,
        );
    }
  }

  /** The application's replicas and pod selector (an orphan pod, or a controller without replicas such as a DaemonSet: one address, no selector). */
  private async application(pod: PodContext): Promise<{ replicas: number; selector?: { matchLabels?: Record<string, string> } }> {
    try {
      const read = await this.readWorkload(applicationOf(pod));
      if (read)
        return {
          replicas: read.spec?.replicas ?? 1,
          ...(read.spec?.selector?.matchLabels ? { selector: { matchLabels: read.spec.selector.matchLabels } } : {}),
        };
    } catch (err) {
      if (apiStatus(err) !== 404) throw err;
    }
    return { replicas: 1 };
  }

  /** Records and creates the pool; false when the StraitSubnet has not `count` addresses left. */
  private async make(
    subnetName: string,
    pool: string,
    family: IpFamily,
    count: number,
    pod: PodContext,
    selector?: { matchLabels?: Record<string, string> },
  ): Promise<boolean> {
    for (let attempt = 0; attempt < 8; attempt++) {
      let object: SubnetObject;
      try {
        object = await this.readSubnet(subnetName);
      } catch (err) {
        if (apiStatus(err) === 404)
          throw new IpamError(
            cniErrorCodes.invalidAnnotation,
            `${subnetNames.kind} ${subnetName}, named by pod ${pod.namespace}/${pod.name}, does not exist`,
          );
        throw err;
      }
      const subnet = readSubnet(object);
      if (subnet.family !== family)
        throw new IpamError(
          cniErrorCodes.invalidAnnotation,
          `${subnetNames.kind} ${subnetName} is IPv${subnet.family}, named as IPv${family} by pod ${pod.namespace}/${pod.name}`,
        );
      const allocations = object.status?.allocations ?? [];
      let ips = allocations.find((a) => a.pool === pool)?.ips;
      if (!ips) {
        const taken = normalizeRanges(
          allocations.flatMap((a, i) =>
            parseIpRanges(`${subnetNames.kind} ${subnetName}: status.allocations[${i}].ips`, a.ips, subnet.subnet),
          ),
        );
        const carved = carvePool(subnet, taken, count);
        if (!carved) return false;
        ips = formatIpRanges(carved);
        const status = { ...(object.status ?? {}), allocations: [...allocations, { pool, ips }] };
        try {
          await this.custom.replaceClusterCustomObjectStatus({
            group,
            version,
            plural: subnetNames.plural,
            name: subnetName,
            body: { ...object, status },
          });
        } catch (err) {
          if (apiStatus(err) === 409) continue;
          throw err;
        }
      }
      const app = applicationOf(pod);
      const spec = {
        subnet: object.spec.subnet,
        ips,
        ...(object.spec.gateway ? { gateway: object.spec.gateway } : {}),
        ...(object.spec.routes ? { routes: object.spec.routes } : {}),
        ...(object.spec.vlan !== undefined ? { vlan: object.spec.vlan } : {}),
        // Only the application's pods may take its addresses (an orphan pod: its namespace).
        namespaceName: [pod.namespace],
        ...(selector ? { podAffinity: selector } : {}),
      };
      // No ownerReference: a cluster-scoped StraitIPPool cannot be owned by a namespaced application (the
      // cluster's collector never collects it); collect() below deletes it once the application is gone.
      const labels = {
        [poolLabels.subnet]: subnetName,
        [poolLabels.kind]: app.kind,
        [poolLabels.namespace]: app.namespace,
        [poolLabels.name]: app.name,
        [poolLabels.uid]: app.uid,
      };
      const metadata = { name: pool, labels };
      try {
        await this.custom.createClusterCustomObject({
          group,
          version,
          plural: ipPoolNames.plural,
          body: { apiVersion, kind: ipPoolNames.kind, metadata, spec },
        });
        this.log.info(
          { subnet: subnetName, pool, ips, application: `${app.kind} ${app.namespace}/${app.name}` },
          `made an application pool from a ${subnetNames.kind}`,
        );
      } catch (err) {
        if (apiStatus(err) !== 409) throw err;
      }
      await this.seen(pool);
      return true;
    }
    throw new IpamError(cniErrorCodes.tryAgainLater, `${subnetNames.kind} ${subnetName} changed under 8 attempts to record pool ${pool}`);
  }

  /**
   * Deletes the application pools whose application is gone or another one by now and whose addresses
   * no claim holds (application-pool-gc.ts), with the pool's uid as precondition, and takes each out of
   * its StraitSubnet's status.allocations, so the StraitSubnet can carve those addresses again. Returns what it deleted.
   */
  async collect(claimedPools: ReadonlySet<string>): Promise<string[]> {
    const records = this.view.pools.list().flatMap(applicationPoolRecord);
    const states = new Map<string, ApplicationState>();
    for (const { application } of records) {
      const key = applicationKey(application);
      if (!states.has(key)) states.set(key, await this.applicationState(application));
    }
    const deleted: string[] = [];
    for (const { pool, reason } of staleApplicationPools(records, states, claimedPools)) {
      try {
        await this.custom.deleteClusterCustomObject({
          group,
          version,
          plural: ipPoolNames.plural,
          name: pool.name,
          body: { preconditions: { uid: pool.uid } },
        });
      } catch (err) {
        // Gone already (another node's pass), or made again since (another uid): nothing of ours to delete.
        if (apiStatus(err) !== 404 && apiStatus(err) !== 409) throw err;
        if (apiStatus(err) === 409) continue;
      }
      await this.forget(pool.subnet, pool.name);
      this.log.info({ pool: pool.name, subnet: pool.subnet, reason }, 'deleted an application pool');
      deleted.push(pool.name);
    }
    return deleted;
  }

  /** What the API server says of an application now. */
  private async applicationState(application: ApplicationPoolRecord['application']): Promise<ApplicationState> {
    const { kind, namespace, name } = application;
    try {
      const read = kind === 'Pod' ? await this.core.readNamespacedPod({ namespace, name }) : await this.readWorkload(application);
      return read ? { uid: read.metadata?.uid ?? '' } : 'unknown';
    } catch (err) {
      return apiStatus(err) === 404 ? 'absent' : 'unknown';
    }
  }

  /** The application's controller with replicas (a StatefulSet, Deployment or ReplicaSet); undefined for another kind. */
  private async readWorkload({ kind, namespace, name }: Pick<ApplicationRef, 'kind' | 'namespace' | 'name'>) {
    const request = { namespace, name };
    if (kind === 'StatefulSet') return this.apps.readNamespacedStatefulSet(request);
    if (kind === 'Deployment') return this.apps.readNamespacedDeployment(request);
    if (kind === 'ReplicaSet') return this.apps.readNamespacedReplicaSet(request);
    return undefined;
  }

  private async readSubnet(name: string): Promise<SubnetObject> {
    return (await this.custom.getClusterCustomObject({ group, version, plural: subnetNames.plural, name })) as SubnetObject;
  }

  /** Takes the pool's entry out of the StraitSubnet's status.allocations (under its resourceVersion; a 409 reads again). */
  private async forget(subnetName: string, pool: string): Promise<void> {
    for (let attempt = 0; attempt < 8; attempt++) {
      let object: SubnetObject;
      try {
        object = await this.readSubnet(subnetName);
      } catch (err) {
        if (apiStatus(err) === 404) return;
        throw err;
      }
      const allocations = object.status?.allocations ?? [];
      if (!allocations.some((a) => a.pool === pool)) return;
      const status = { ...object.status, allocations: allocations.filter((a) => a.pool !== pool) };
      try {
        await this.custom.replaceClusterCustomObjectStatus({
          group,
          version,
          plural: subnetNames.plural,
          name: subnetName,
          body: { ...object, status },
        });
        return;
      } catch (err) {
        if (apiStatus(err) !== 409) throw err;
      }
    }
    throw new Error(`${subnetNames.kind} ${subnetName} changed under 8 attempts to forget pool ${pool}`);
  }

  /** Waits (bounded) until the pools informer has the pool, so the filter that follows finds it. */
  private async seen(pool: string): Promise<void> {
    for (let waited = 0; waited < 5000 && !this.view.pools.get(pool); waited += 20) await new Promise((r) => setTimeout(r, 20));
  }
}

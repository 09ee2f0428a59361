/** An Informer on a cluster-scoped strait.io collection (all of it, or what a field selector picks). */
import { CustomObjectsApi, type KubeConfig, type KubernetesListObject, type KubernetesObject } from '@kubernetes/client-node';
import { group, version } from '../api/resource-names';
import type { Logger } from '../log';
import { Informer } from './informer';

export function straitInformer<T extends KubernetesObject>(
  kubeConfig: KubeConfig,
  plural: string,
  options: { fieldSelector?: string; log?: Logger } = {},
): Informer<T> {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const { fieldSelector, log } = options;
  return new Informer<T>({
    kubeConfig,
    path: `/apis/${group}/${version}/${plural}`,
    list: (page) =>
      api.listClusterCustomObject({ group, version, plural, ...page, ...(fieldSelector ? { fieldSelector } : {}) }) as Promise<
        KubernetesListObject<T>
      >,
    ...(fieldSelector ? { fieldSelector } : {}),
    ...(log ? { log } : {}),
  });
}

/** A CRD for tests of custom resources in general (crds.test.ts, and its restart on etcd in etcd-storage.test.ts). */
import type { V1CustomResourceDefinition } from '@kubernetes/client-node';

export /** A small CRD of group example.com: Widget, cluster-scoped, `spec.size` an integer. */
function widgetCrd(
  overrides: { name?: string; group?: string; storage?: boolean[]; extraField?: string } = {},
): V1CustomResourceDefinition {
  const group = overrides.group ?? 'example.com';
  const properties: Record<string, object> = { size: { type: 'integer' } };
  if (overrides.extraField) properties[overrides.extraField] = { type: 'string' };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: overrides.name ?? `widgets.${group}` },
    spec: {
      group,
      scope: 'Cluster',
      names: { kind: 'Widget', listKind: 'WidgetList', plural: 'widgets', singular: 'widget' },
      versions: (overrides.storage ?? [true]).map((storage, i) => ({
        name: `v${i + 1}`,
        served: true,
        storage,
        schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties } } } },
      })),
    },
  };
}

/**
 * The resources served right now: the built-ins, and one per CustomResourceDefinition in the store. A
 * CRD's resource is served from the moment it is stored (the real server's Established condition) and
 * stops with it; an update of the CRD (a new field in its schema, another printer column) takes effect at
 * once, as the real server's CRD handler swaps its storage.
 */
import { crdResource } from './custom-resource-definitions';
import type { KubeObject } from './kube-object';
import { type ResourceType, customResourceType } from './resource-types';
import type { Store } from './store';

export class ServedTypes {
  private readonly custom = new Map<string, ResourceType>();
  /** all()'s answer until a CRD changes: every request asks for it. */
  private served: ResourceType[] | undefined;

  constructor(
    private readonly builtIns: readonly ResourceType[],
    store: Store,
  ) {
    for (const crd of store.list(crdResource)) this.serve(crd);
    store.onChange((change) => {
      if (change.resource !== crdResource) return;
      if (change.type === 'DELETED') this.custom.delete(change.object.metadata.name);
      else this.serve(change.object);
      this.served = undefined;
    });
  }

  all(): ResourceType[] {
    return (this.served ??= [...this.builtIns, ...this.custom.values()]);
  }

  find(group: string, version: string, plural: string): ResourceType | undefined {
    return this.all().find((t) => t.group === group && t.version === version && t.plural === plural);
  }

  private serve(crd: KubeObject): void {
    this.custom.set(crd.metadata.name, customResourceType(crd));
  }
}

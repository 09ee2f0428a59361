/**
 * kube-controller-manager's garbage collector (pkg/controller/garbagecollector) for owner references, as
 * far as Strait's objects and the chart's workloads use them: when an owner is deleted, each dependent (an
 * object whose ownerReferences name the owner's uid) loses that reference, and is deleted too once no
 * owner it names is left (background propagation, the default; its own finalizers are respected). A
 * DELETE with `propagationPolicy: Orphan` (or `orphanDependents`) only removes the references. A
 * cluster-scoped dependent of a namespaced owner is never collected: the real collector cannot resolve
 * such an owner, and reports a Warning Event `OwnerRefInvalidNamespace` about the dependent (kubernetes.io,
 * "Owners and Dependents"). Not here: dependents of an owner that never existed, foreground deletion
 * (`blockOwnerDeletion`), the collector's delay (it acts once the deletion is written).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { type KubeObject, copy, isRecord, timestamp } from './kube-object';
import type { Store } from './store';

interface Stored {
  resource: string;
  object: KubeObject;
}

interface OwnerReference {
  uid?: string;
  kind?: string;
  name?: string;
}

const ownerReferences = (object: KubeObject): OwnerReference[] =>
  Array.isArray(object.metadata.ownerReferences) ? (object.metadata.ownerReferences as unknown[]).filter(isRecord) : [];

export class GarbageCollector {
  constructor(
    private readonly store: Store,
    /** Deletes a dependent as a DELETE would (finalizers hold it). */
    private readonly remove: (resource: string, object: KubeObject) => Promise<void>,
    /** Runs the collector's work after a change, in its turn among the server's writes. */
    afterChange: (work: () => Promise<void>) => void,
  ) {
    // Once every listener has the deletion, as the collector acts on what it watched.
    store.onChange((change) => {
      if (change.type === 'DELETED' && change.object.metadata.uid) afterChange(() => this.ownerGone(change.object));
    });
  }

  /** `propagationPolicy: Orphan`: the dependents keep living, without their reference to `owner`. */
  async orphan(owner: KubeObject): Promise<void> {
    for (const { resource, object } of this.dependentsOf(owner)) await this.withoutOwner(resource, object, owner);
  }

  private async ownerGone(owner: KubeObject): Promise<void> {
    const dependents = this.dependentsOf(owner);
    if (dependents.length === 0) return;
    // One read of every uid for the pass, not one per owner reference of each dependent.
    const live = new Set(this.all().map(({ object }) => object.metadata.uid));
    for (const { resource, object } of dependents) {
      if (object.metadata.namespace === undefined && owner.metadata.namespace !== undefined) {
        await this.invalidNamespace(object, owner);
        continue;
      }
      const others = ownerReferences(object).filter((r) => r.uid !== owner.metadata.uid);
      if (others.some((r) => r.uid !== undefined && live.has(r.uid))) await this.withoutOwner(resource, object, owner);
      else await this.remove(resource, object);
    }
  }

  private async withoutOwner(resource: string, object: KubeObject, owner: KubeObject): Promise<void> {
    const next = copy(object);
    const left = ownerReferences(object).filter((r) => r.uid !== owner.metadata.uid);
    if (left.length > 0) next.metadata.ownerReferences = left;
    else delete next.metadata.ownerReferences;
    await this.store.put(resource, next);
  }

  private dependentsOf(owner: KubeObject): Stored[] {
    const uid = owner.metadata.uid;
    return this.all().filter(({ object }) => ownerReferences(object).some((r) => r.uid === uid));
  }

  private all(): Stored[] {
    return this.store.resources().flatMap((resource) => this.store.list(resource).map((object) => ({ resource, object })));
  }

  /** The collector's Warning Event about a dependent whose owner it cannot resolve (in `default`, its namespace being none). */
  private async invalidNamespace(dependent: KubeObject, owner: KubeObject): Promise<void> {
    const now = timestamp();
    await this.store.put('events', {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: {
        name: `${dependent.metadata.name}.${randomBytes(8).toString('hex')}`,
        namespace: 'default',
        uid: randomUUID(),
        creationTimestamp: now,
      },
      involvedObject: {
        apiVersion: dependent.apiVersion,
        kind: dependent.kind,
        name: dependent.metadata.name,
        uid: dependent.metadata.uid,
      },
      reason: 'OwnerRefInvalidNamespace',
      message: `ownerRef [${owner.apiVersion}/${owner.kind}, namespace: ${owner.metadata.namespace}, name: ${owner.metadata.name}, uid: ${owner.metadata.uid}] does not exist in namespace ""`,
      type: 'Warning',
      source: { component: 'garbage-collector-controller' },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    });
  }
}

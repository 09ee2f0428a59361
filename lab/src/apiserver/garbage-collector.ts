/**
 * kube-controller-manager's garbage collector (pkg/controller/garbagecollector) for owner references, as
 * far as Strait's objects and the chart's workloads use them: when an owner is deleted, each dependent (an
 * object whose ownerReferences name the owner's uid) loses that reference, and is deleted too once no
 * owner it names is left (background propagation, the default; its own finalizers are respected). A
 * DELETE with `propagationPolicy: Orphan` (or `orphanDependents`) only removes the references. A
 * cluster-scoped dependent of a namespaced owner is never collected: the real collector cannot resolve
 * such an owner, and reports a Warning Event `OwnerRefInvalidNamespace` about the dependent (kubernetes.io,
 * "Owners and Dependents"). Foreground deletion: an owner deleted with `propagationPolicy: Foreground`
 * stays, marked and held by the finalizer `foregroundDeletion`, while the collector deletes its dependents
 * (those with dependents of their own in the foreground too); once no dependent with `blockOwnerDeletion`
 * is left, the collector removes the finalizer and the owner goes (garbagecollector.go
 * `processDeletingDependentsItem`, `attemptToDeleteItem`). Not here: dependents of an owner that never
 * existed, the collector's delay (it acts once the deletion is written).
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
  blockOwnerDeletion?: boolean;
}

/** The finalizer that holds an owner deleted in the foreground until its blocking dependents are gone. */
export const foregroundDeletion = 'foregroundDeletion';

const inForeground = (object: KubeObject) =>
  object.metadata.deletionTimestamp !== undefined && (object.metadata.finalizers ?? []).includes(foregroundDeletion);

const ownerReferences = (object: KubeObject): OwnerReference[] =>
  Array.isArray(object.metadata.ownerReferences) ? (object.metadata.ownerReferences as unknown[]).filter(isRecord) : [];

export class GarbageCollector {
  constructor(
    private readonly store: Store,
    /** Deletes a dependent as a DELETE would (finalizers hold it), in the foreground when told. */
    private readonly remove: (resource: string, object: KubeObject, foreground: boolean) => Promise<void>,
    /** Runs the collector's work after a change, in its turn among the server's writes. */
    afterChange: (work: () => Promise<void>) => void,
  ) {
    // Once every listener has the change, as the collector acts on what it watched.
    store.onChange((change) => {
      const { object } = change;
      if (change.type === 'DELETED' && object.metadata.uid) {
        afterChange(() => this.ownerGone(object));
        // A dependent gone may be the last one an owner deleted in the foreground waits for.
        for (const ref of ownerReferences(object)) if (ref.uid !== undefined) afterChange(() => this.foreground(ref.uid!));
      } else if (change.type !== 'DELETED' && inForeground(object) && !(change.previous && inForeground(change.previous))) {
        afterChange(() => this.foreground(object.metadata.uid!));
      }
    });
  }

  /**
   * An owner deleted in the foreground (by uid, read again: it may have gone since): its dependents
   * deleted, and its finalizer removed once no dependent blocks it.
   */
  private async foreground(uid: string): Promise<void> {
    const owner = this.all().find(({ object }) => object.metadata.uid === uid);
    if (!owner || !inForeground(owner.object)) return;
    const dependents = this.dependentsOf(owner.object);
    const live = new Set(this.all().map(({ object }) => object.metadata.uid));
    for (const { resource, object } of dependents) {
      if (object.metadata.deletionTimestamp) continue; // being deleted already
      const others = ownerReferences(object).filter((r) => r.uid !== uid);
      if (others.some((r) => r.uid !== undefined && live.has(r.uid))) await this.withoutOwner(resource, object, owner.object);
      else await this.remove(resource, object, this.dependentsOf(object).length > 0);
    }
    const blocking = this.dependentsOf(owner.object).filter(({ object }) =>
      ownerReferences(object).some((r) => r.uid === uid && r.blockOwnerDeletion === true),
    );
    if (blocking.length > 0) return;
    const current = this.store.get(owner.resource, owner.object.metadata.namespace, owner.object.metadata.name);
    if (!current || current.metadata.uid !== uid) return;
    const finalizers = (current.metadata.finalizers ?? []).filter((f) => f !== foregroundDeletion);
    if (finalizers.length === 0) await this.store.delete(owner.resource, current.metadata.namespace, current.metadata.name);
    else await this.store.put(owner.resource, { ...current, metadata: { ...current.metadata, finalizers } });
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
      else await this.remove(resource, object, false);
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

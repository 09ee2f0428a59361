/**
 * The IPAM state in the API server (the Store port of src/store/store.ts, for the controller on
 * Kubernetes; here rather than in src/store/ because it speaks the API): one ClusterNetworks, one
 * PeerNetworks per peer, one NatMapping per address (src/controller/kubernetes/ipam-objects.ts says why, and why the
 * order of the writes keeps every invariant when they stop half-way).
 *
 * Every write carries a precondition on what was read: a create must find no object (a NatMapping is
 * named after its address, so two controllers cannot both give it away), a replace or a delete the
 * resourceVersion read. A 409 (or 404) means another writer changed the objects since: save() throws a
 * StateError and refuses until load() reads them again, so a controller that lost its lease, or raced
 * another for a moment, never writes over what it did not see. Unlike the FileStore a save is not all or
 * nothing: a crash between two writes leaves the old state with part of the change, which load() reads
 * as a valid state (no address given twice, nothing kept for a peer that is gone), and the next save
 * completes it.
 */
import type { CustomObjectsApi, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import { type CompiledValidatorName, checkCompiled } from '../../api/compiled-validators';
import { makeObject } from '../../api/object';
import { type ResourceNames, clusterNetworksNames, group, natMappingNames, peerNetworksNames, version } from '../../api/resource-names';
import { InputError, StateError } from '../../errors';
import type { IpamPlanes } from '../../network-ipam/planes';
import type { Logger } from '../../log';
import { type IpamObjectKind, type IpamObjects, type IpamWrite, ipamFromObjects, ipamObjects, ipamWrites } from './ipam-objects';
import type { Store, StoreLock } from '../../store/store';
import { apiErrorText, apiStatus } from '../../k8s/api-errors';
import { listAllPages } from '../../k8s/pager';

/** Each kind's names and the validator of its spec. */
const kinds = {
  ClusterNetworks: { names: clusterNetworksNames, spec: 'clusterNetworksSpec' },
  PeerNetworks: { names: peerNetworksNames, spec: 'peerNetworksSpec' },
  NatMapping: { names: natMappingNames, spec: 'natMappingSpec' },
} as const satisfies Record<IpamObjectKind, { names: ResourceNames; spec: CompiledValidatorName }>;

export interface ApiIpamStoreOptions {
  api: CustomObjectsApi;
  clusterId: string;
  /** Whether this controller holds the lease: the store's writer lock. */
  leading: () => boolean;
  log?: Logger;
}

/** Objects as read, for ipamWrites: also those dropped on reading, so the next save replaces or deletes them. */
const emptyObjects = (): IpamObjects => ({ peers: new Map(), natMappings: new Map() });

export class ApiIpamStore implements Store<IpamPlanes> {
  /** As last read or written; undefined before load() and after a conflict. */
  private current: IpamObjects | undefined;
  private readonly versions = new Map<string, string>();
  /** What the last load() left out, each with why (for a condition). */
  dropped: string[] = [];

  constructor(private readonly options: ApiIpamStoreOptions) {}

  /** The lease is the lock: refused unless this controller leads. */
  async lock(): Promise<StoreLock> {
    if (!this.options.leading())
      throw new StateError(
        `the IPAM of cluster ${this.options.clusterId} is written by the controller holding the lease; this one does not`,
      );
    return { release: async () => undefined };
  }

  async load(): Promise<IpamPlanes | undefined> {
    const read = emptyObjects();
    const usable = emptyObjects();
    const dropped: string[] = [];
    this.versions.clear();
    for (const kind of ['ClusterNetworks', 'PeerNetworks', 'NatMapping'] as const) {
      // NatMappings grow with the endpoints: in pages, as client-go lists.
      const list = await listAllPages(
        (page) =>
          this.options.api.listClusterCustomObject({ group, version, plural: kinds[kind].names.plural, ...page }) as Promise<
            KubernetesListObject<KubernetesObject & { spec?: unknown }>
          >,
      );
      for (const object of list.items) {
        const name = object.metadata?.name ?? '';
        this.versions.set(`${kind}/${name}`, object.metadata?.resourceVersion ?? '');
        // Another cluster's ClusterNetworks is not ours to read, nor to delete.
        if (kind === 'ClusterNetworks' && name !== this.options.clusterId) continue;
        let spec;
        try {
          spec = checkCompiled(kinds[kind].spec, object.spec, 'spec');
        } catch (err) {
          if (!(err instanceof InputError)) throw err;
          dropped.push(`${kind} ${name}: ${err.message}`);
        }
        for (const objects of spec === undefined ? [read] : [read, usable]) {
          if (kind === 'ClusterNetworks') objects.cluster = { name, spec: (spec ?? object.spec) as never };
          else (kind === 'PeerNetworks' ? objects.peers : objects.natMappings).set(name, (spec ?? object.spec) as never);
        }
      }
    }
    const restored = ipamFromObjects(usable);
    this.dropped = [...dropped, ...restored.dropped];
    if (this.dropped.length > 0)
      this.options.log?.warn(
        { clusterId: this.options.clusterId, dropped: this.dropped },
        'IPAM objects left out on reading; the next save replaces or deletes them',
      );
    this.current = read;
    return restored.state;
  }

  /** Writes the objects that differ, in ipamWrites' order; a conflict throws a StateError (load again). */
  async save(state: IpamPlanes): Promise<void> {
    if (!this.current) throw new StateError('the IPAM objects must be read (load) before a save, and again after a conflict');
    for (const write of ipamWrites(this.current, ipamObjects(this.options.clusterId, state))) await this.apply(write);
  }

  private async apply(write: IpamWrite): Promise<void> {
    const id = `${write.kind}/${write.name}`;
    const plural = kinds[write.kind].names.plural;
    const resourceVersion = this.versions.get(id);
    const { api } = this.options;
    try {
      if (write.op === 'put') {
        const body = makeObject(kinds[write.kind].names, write.name, write.spec);
        if (resourceVersion !== undefined) body.metadata.resourceVersion = resourceVersion;
        const stored = (
          resourceVersion === undefined
            ? await api.createClusterCustomObject({ group, version, plural, body })
            : await api.replaceClusterCustomObject({ group, version, plural, name: write.name, body })
        ) as KubernetesObject;
        this.versions.set(id, stored.metadata?.resourceVersion ?? '');
      } else {
        await api.deleteClusterCustomObject({ group, version, plural, name: write.name, body: { preconditions: { resourceVersion } } });
        this.versions.delete(id);
      }
    } catch (err) {
      const status = apiStatus(err);
      if (status !== 409 && status !== 404) throw err;
      this.current = undefined;
      throw new StateError(`${id}: changed by another writer since it was read (${apiErrorText(err)}); read the IPAM objects again`);
    }
    const current = this.current!;
    if (write.kind === 'ClusterNetworks') {
      if (write.op === 'put') current.cluster = { name: write.name, spec: write.spec };
    } else {
      const table = (write.kind === 'PeerNetworks' ? current.peers : current.natMappings) as Map<string, unknown>;
      if (write.op === 'delete') table.delete(write.name);
      else table.set(write.name, write.spec);
    }
  }
}

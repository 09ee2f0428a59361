/**
 * Writes of one kind of strait.io object (cluster-scoped) through an API server: the creates, updates
 * and deletes `objectWrites` plans, and statuses. Creates, updates and statuses are server-side applies
 * by the manager `strait-controller`, of what the controller wants and nothing else: labels,
 * annotations and finalizers other writers add stay (a replace would wipe them). Every update and
 * delete carries the resourceVersion the plan was made from, so a write based on a stale read fails
 * with 409 instead of undoing someone else's change; the caller reads again and plans again.
 */
import type { CustomObjectsApi } from '@kubernetes/client-node';
import { type ResourceNames, apiVersion, group, version } from '../../api/resource-names';
import { apiStatus } from '../../k8s/api-errors';
import { fieldManagers, forcedApply } from '../../k8s/server-side-apply';
import type { ObjectWrite } from './objects';

/** What the server answered a create or update with. */
export interface WrittenObject {
  resourceVersion?: string;
  uid?: string;
}

export class StraitObjects {
  constructor(
    private readonly api: CustomObjectsApi,
    /** The resource's kind and plural name: NodeDataplane and nodedataplanes... */
    private readonly names: ResourceNames,
  ) {}

  get plural(): string {
    return this.names.plural;
  }

  /**
   * Runs the writes in order, telling `written` of each done with the object's resourceVersion and uid
   * as the server answered (none for a delete); the first that fails throws (the rest wait for the next plan).
   */
  async apply(writes: readonly ObjectWrite[], written: (write: ObjectWrite, object?: WrittenObject) => void = () => {}): Promise<void> {
    const { plural } = this;
    const versionOf = (object: unknown): WrittenObject => {
      const meta = (object as { metadata?: WrittenObject } | undefined)?.metadata;
      return { ...(meta?.resourceVersion ? { resourceVersion: meta.resourceVersion } : {}), ...(meta?.uid ? { uid: meta.uid } : {}) };
    };
    const fieldManager = fieldManagers.controller;
    for (const w of writes) {
      if (w.op === 'create' || w.op === 'update') {
        // An apply creates what is missing; an update's resourceVersion makes a stale plan a 409.
        const metadata = w.op === 'update' ? { ...w.object.metadata, resourceVersion: w.resourceVersion } : w.object.metadata;
        const body = { ...w.object, metadata };
        const name = w.object.metadata.name;
        written(w, versionOf(await this.api.patchClusterCustomObject({ group, version, plural, name, body, fieldManager }, forcedApply)));
      } else {
        await this.api.deleteClusterCustomObject({
          group,
          version,
          plural,
          name: w.name,
          body: { preconditions: { resourceVersion: w.resourceVersion } },
        });
        written(w);
      }
    }
  }

  /** The object named `name`, or undefined when there is none (a 404); any other failure throws. */
  async read(name: string): Promise<unknown> {
    const { plural } = this;
    try {
      return await this.api.getClusterCustomObject({ group, version, plural, name });
    } catch (err) {
      if (apiStatus(err) === 404) return undefined;
      throw err;
    }
  }

  /** Applies the status through the status subresource: the fields of the last status applied and not of this one go. */
  async patchStatus(name: string, status: unknown): Promise<void> {
    const { plural } = this;
    const body = { apiVersion, kind: this.names.kind, metadata: { name }, status };
    await this.api.patchClusterCustomObjectStatus(
      { group, version, plural, name, body, fieldManager: fieldManagers.controller },
      forcedApply,
    );
  }
}

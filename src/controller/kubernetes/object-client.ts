/**
 * Writes of one kind of strait.io object (cluster-scoped) through an API server: the creates, updates
 * and deletes `objectWrites` plans, and status patches. Every update and delete carries the
 * resourceVersion the plan was made from, so a write based on a stale read fails with 409 instead of
 * undoing someone else's change; the caller reads again and plans again.
 */
import { type CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { group, version } from '../../api/resource-names';
import { apiStatus } from '../../k8s/api-errors';
import type { ObjectWrite } from './objects';

/** What the server answered a create or update with. */
export interface WrittenObject {
  resourceVersion?: string;
  uid?: string;
}

export class StraitObjects {
  constructor(
    private readonly api: CustomObjectsApi,
    /** The resource's plural name: nodedataplanes, tunnelendpoints, networkconfigs... */
    readonly plural: string,
  ) {}

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
    for (const w of writes) {
      if (w.op === 'create') {
        written(w, versionOf(await this.api.createClusterCustomObject({ group, version, plural, body: w.object })));
      } else if (w.op === 'update') {
        const body = { ...w.object, metadata: { ...w.object.metadata, resourceVersion: w.resourceVersion } };
        written(w, versionOf(await this.api.replaceClusterCustomObject({ group, version, plural, name: w.object.metadata.name, body })));
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

  /** Replaces the status through the status subresource (a merge patch of `status` alone). */
  async patchStatus(name: string, status: unknown): Promise<void> {
    const { plural } = this;
    await this.api.patchClusterCustomObjectStatus(
      { group, version, plural, name, body: { status } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }
}

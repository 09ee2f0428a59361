/**
 * Writes of IPClaims: create (a 409 means another pod has the address), take over (a StatefulSet pod's
 * next incarnation, with the claim's resourceVersion), mark as conflicting, detach and release (delete
 * with the claim's uid as precondition, so a claim someone made again since is never deleted).
 */
import { type CustomObjectsApi } from '@kubernetes/client-node';
import { apiVersion, group, ipClaimNames, version } from '../../api/resource-names';
import { apiStatus } from '../../k8s/api-errors';
import { type Claim, claimName, readClaim, writeClaimSpec } from '../claim';
import type { ClaimIndex } from './claim-index';
import type { IPClaimObject } from './cluster-view';

const { kind, plural } = ipClaimNames;

export type ClaimFields = Omit<Claim, 'name' | 'uid' | 'resourceVersion' | 'created'>;

export class ClaimWriter {
  constructor(
    private readonly api: CustomObjectsApi,
    private readonly index: ClaimIndex,
  ) {}

  /** The new claim, or undefined when the address is claimed already (409). */
  async create(fields: ClaimFields): Promise<Claim | undefined> {
    const body = { apiVersion, kind, metadata: { name: claimName(fields.address) }, spec: writeClaimSpec(fields) };
    try {
      const claim = readClaim((await this.api.createClusterCustomObject({ group, version, plural, body })) as IPClaimObject);
      this.index.record(claim);
      return claim;
    } catch (err) {
      if (apiStatus(err) === 409) return undefined;
      throw err;
    }
  }

  /** Replaces the claim's holder fields; throws on 409 (changed since it was read). */
  async update(claim: Claim, fields: ClaimFields): Promise<Claim> {
    const body = {
      apiVersion,
      kind,
      metadata: { name: claim.name, resourceVersion: claim.resourceVersion },
      spec: writeClaimSpec(fields),
    };
    const written = readClaim(
      (await this.api.replaceClusterCustomObject({ group, version, plural, name: claim.name, body })) as IPClaimObject,
    );
    this.index.record(written);
    return written;
  }

  /** Deletes the claim unless it is gone or is another claim of the same address by now. */
  async release(claim: Claim): Promise<void> {
    try {
      await this.api.deleteClusterCustomObject({ group, version, plural, name: claim.name, body: { preconditions: { uid: claim.uid } } });
    } catch (err) {
      const status = apiStatus(err);
      // 409: the name holds another claim (the address claimed again): not ours to mark deleted.
      if (status === 409) return;
      if (status !== 404) throw err;
    }
    this.index.forget(claim);
  }
}

/** The claim's fields, changed. */
export const fieldsOf = (claim: Claim, change: Partial<ClaimFields> = {}): ClaimFields => {
  const { name: _n, uid: _u, resourceVersion: _r, created: _c, ...fields } = claim;
  return { ...fields, ...change };
};

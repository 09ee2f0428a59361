/**
 * The claim index's overlay of this service's own writes over the informer's cache (src/pool-ipam/service/
 * claim-index.ts), with a stand-in informer and API server: an entry of ours never hides a newer claim
 * of the same address. What the crash test once showed (a claim outliving its container's DEL) follows
 * from the opposite: a release with an old claim's uid, answered 409 after the address was claimed again.
 */
import assert from 'node:assert/strict';
import type { IPClaimObject } from '../../src/pool-ipam/service/cluster-view';
import { ClaimIndex } from '../../src/pool-ipam/service/claim-index';
import { ClaimWriter } from '../../src/pool-ipam/service/claim-writer';
import type { CustomObjectsApi } from '@kubernetes/client-node';

const name = '10.9.0.121';

/** The claim of `name` with `uid` at `resourceVersion`, held by container ctr-`holder`. */
const claimObject = (uid: string, resourceVersion: number, holder: string): IPClaimObject => ({
  apiVersion: 'strait.io/v1alpha1',
  kind: 'IPClaim',
  metadata: { name, uid, resourceVersion: String(resourceVersion), creationTimestamp: new Date(0) },
  spec: {
    address: name,
    pool: 'crash',
    podNamespace: 'default',
    podName: `crash-${holder}`,
    podUID: `pod-${holder}`,
    node: 'node-a',
    network: 'underlay',
    ifname: 'eth0',
    containerID: `ctr-${holder}`,
  },
});

/** An informer's cache the test sets, telling the index of each change as the real one does. */
function standInInformer() {
  const cache = new Map<string, IPClaimObject>();
  const handlers: ((key: string) => void)[] = [];
  return {
    onChange: (handler: (key: string) => void) => void handlers.push(handler),
    get: (key: string) => cache.get(key),
    list: () => [...cache.values()],
    set(object: IPClaimObject | undefined) {
      if (object) cache.set(name, object);
      else cache.delete(name);
      for (const handler of handlers) handler(name);
    },
  };
}

/** The API server's object of `name`, deleted by uid precondition as kube-apiserver does (404 gone, 409 another uid). */
function standInApi(stored: { object?: IPClaimObject }) {
  const failure = (code: number) => Object.assign(new Error(String(code)), { code });
  return {
    deleteClusterCustomObject: async ({ body }: { body: { preconditions: { uid: string } } }) => {
      if (!stored.object) throw failure(404);
      if (body.preconditions.uid !== stored.object.metadata!.uid) throw failure(409);
      stored.object = undefined;
    },
  } as unknown as CustomObjectsApi;
}

const holders = (index: ClaimIndex) => index.all().map((c) => `${c.containerID} ${c.uid}`);

describe('pool IPAM claim index (pure, with stand-ins)', () => {
  it('a release with an older claim uid (409: the address was claimed again) leaves the newer claim visible', async () => {
    const informer = standInInformer();
    const stored: { object?: IPClaimObject } = {};
    const index = new ClaimIndex(informer);
    const writer = new ClaimWriter(standInApi(stored), index);
    informer.set(claimObject('u0', 10, 'A'));
    const stale = index.get(name)!; // e.g. a garbage collection pass's copy of ctr-A's claim
    // ctr-A's DEL released it and ctr-109's ADD claimed the address again; the informer saw both.
    informer.set(undefined);
    stored.object = claimObject('u1', 12, '109');
    informer.set(stored.object);
    assert.deepEqual(holders(index), ['ctr-109 u1']);
    await writer.release(stale);
    assert.deepEqual(holders(index), ['ctr-109 u1'], 'the 409 is no deletion of ctr-109 claim');
    assert.equal(stored.object?.spec.containerID, 'ctr-109');
    assert.deepEqual(
      index.ofAttachment('ctr-109', 'eth0', 'underlay').map((c) => c.uid),
      ['u1'],
      'its DEL finds it',
    );
  });

  it('a late record of a deletion (a 404 answered after the address was claimed again and seen) hides nothing newer', () => {
    const informer = standInInformer();
    const index = new ClaimIndex(informer);
    informer.set(claimObject('u1', 12, '109'));
    index.forget({ ...index.get(name)!, uid: 'u0', resourceVersion: '10' });
    assert.deepEqual(holders(index), ['ctr-109 u1']);
  });

  it("our own write stays visible until the informer catches up, and our deletion hides the informer's older copy", () => {
    const informer = standInInformer();
    const index = new ClaimIndex(informer);
    informer.set(claimObject('u0', 10, 'A'));
    const held = index.get(name)!;
    index.forget(held); // released by us: the informer has not seen the deletion yet
    assert.deepEqual(holders(index), []);
    informer.set(undefined);
    const created = { ...held, uid: 'u1', resourceVersion: '12', containerID: 'ctr-B' };
    index.record(created); // claimed again by us, before the informer saw it
    assert.deepEqual(holders(index), ['ctr-B u1']);
    informer.set(claimObject('u1', 12, 'B'));
    assert.deepEqual(holders(index), ['ctr-B u1']);
  });
});

import assert from 'node:assert/strict';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ObjectWrite, WantedObject } from '../../../src/controller/kubernetes/objects';
import { UnseenWrites } from '../../../src/controller/kubernetes/unseen-writes';

const object = (name: string): WantedObject => ({
  apiVersion: 'strait.io/v1alpha1',
  kind: 'NodeDataplane',
  metadata: { name, labels: {} },
  spec: {},
});

describe("the controller's own writes its informers have not shown yet (pure)", () => {
  it('holds a reconcile until the cache shows each write: a create there, an update or delete no longer at the version it was planned from', () => {
    const cache = new Map<string, KubernetesObject>([
      ['n1', { metadata: { name: 'n1', resourceVersion: '10' } }],
      ['n2', { metadata: { name: 'n2', resourceVersion: '11' } }],
    ]);
    const unseen = new UnseenWrites(1_000, () => 0);
    const writes: ObjectWrite[] = [
      { op: 'create', object: object('n3') },
      { op: 'update', object: object('n1'), resourceVersion: '10' },
      { op: 'delete', name: 'n2', resourceVersion: '11' },
    ];
    unseen.wrote(cache, writes[0]!, '12');
    unseen.wrote(cache, writes[1]!, '13');
    unseen.wrote(cache, writes[2]!);
    assert.equal(unseen.allSeen(), false);
    cache.set('n3', { metadata: { name: 'n3', resourceVersion: '12' } });
    assert.equal(unseen.allSeen(), false, 'n1 and n2 not seen yet');
    cache.set('n1', { metadata: { name: 'n1', resourceVersion: '15' } });
    assert.equal(unseen.allSeen(), false, 'n2 not seen yet (a newer n1 than ours counts as seen)');
    cache.delete('n2');
    assert.equal(unseen.allSeen(), true);
  });

  it('does not wait for an update that changed nothing, nor longer than its timeout', () => {
    let now = 0;
    const cache = new Map<string, KubernetesObject>([['n1', { metadata: { name: 'n1', resourceVersion: '10' } }]]);
    const unseen = new UnseenWrites(1_000, () => now);
    unseen.wrote(cache, { op: 'update', object: object('n1'), resourceVersion: '10' }, '10');
    assert.equal(unseen.allSeen(), true, 'the server kept the version: there is no event to wait for');
    unseen.wrote(cache, { op: 'create', object: object('n2') }, '11');
    now = 999;
    assert.equal(unseen.allSeen(), false);
    now = 1_000;
    assert.equal(unseen.allSeen(), true, 'a lost event holds reconciles back one second at most');
  });
});

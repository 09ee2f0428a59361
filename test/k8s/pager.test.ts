/** Lists in pages as client-go's ListPager does (tools/pager: limit 500, continue, a full list when the token expired). */
import assert from 'node:assert/strict';
import { ApiException, type KubernetesListObject, type KubernetesObject } from '@kubernetes/client-node';
import { type ListPage, listAllPages } from '../../src/k8s/pager';

const objects = (from: number, count: number) => Array.from({ length: count }, (_, i) => ({ metadata: { name: `o${from + i}` } }));

describe('pager', () => {
  it('follows continue tokens to the last page, returning its resourceVersion', async () => {
    const asked: ListPage[] = [];
    const list = await listAllPages(async (page): Promise<KubernetesListObject<KubernetesObject>> => {
      asked.push(page);
      const from = Number(page._continue ?? 0);
      return {
        items: objects(from, Math.min(500, 1100 - from)),
        metadata: { resourceVersion: '7', ...(from + 500 < 1100 ? { _continue: String(from + 500) } : {}) },
      };
    });
    assert.equal(list.items.length, 1100);
    assert.deepEqual(asked, [{ limit: 500 }, { limit: 500, _continue: '500' }, { limit: 500, _continue: '1000' }]);
    assert.equal(list.metadata?.resourceVersion, '7');
  });

  it('lists whole when a continue token expired (410), as FullListIfExpired', async () => {
    const asked: ListPage[] = [];
    const list = await listAllPages(async (page): Promise<KubernetesListObject<KubernetesObject>> => {
      asked.push(page);
      if (page._continue) throw new ApiException(410, 'Gone', { reason: 'Expired' }, {});
      if (page.limit) return { items: objects(0, 500), metadata: { _continue: 'x' } };
      return { items: objects(0, 900), metadata: { resourceVersion: '9' } };
    });
    assert.equal(list.items.length, 900);
    assert.deepEqual(asked, [{ limit: 500 }, { limit: 500, _continue: 'x' }, {}]);
  });
});

/**
 * A list in pages, as client-go's reflector lists through its ListPager (k8s.io/client-go/tools/pager):
 * `limit=500` and the `continue` token of each page until there is none, so the first list of a large
 * collection costs the API server and etcd bounded chunks rather than one huge response. A continue
 * token that expired before the last page (410 Gone: etcd compacted the snapshot) falls back to one
 * full list, as the pager's FullListIfExpired does.
 */
import type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import { apiStatus } from './api-errors';

/** What a page request adds to a list call (client-node's parameter names). */
export interface ListPage {
  limit?: number;
  _continue?: string;
}

/** The pager's defaultPageSize. */
const pageSize = 500;

/** Every item of the collection, with the resourceVersion of its snapshot (the last page's). */
export async function listAllPages<T extends KubernetesObject>(
  list: (page: ListPage) => Promise<KubernetesListObject<T>>,
): Promise<KubernetesListObject<T>> {
  const items: T[] = [];
  let page = await list({ limit: pageSize });
  items.push(...page.items);
  while (page.metadata?._continue) {
    try {
      page = await list({ limit: pageSize, _continue: page.metadata._continue });
    } catch (err) {
      if (apiStatus(err) !== 410) throw err;
      return list({});
    }
    items.push(...page.items);
  }
  return { ...page, items };
}

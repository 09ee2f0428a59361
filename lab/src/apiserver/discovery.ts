/**
 * Discovery, what clients read before anything else to map a kind to its URL: /version, /api, /apis, the
 * APIResourceList of each group version, and the aggregated form kubectl 1.31 asks for first (Accept
 * `application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`, one answer for all groups;
 * served, so kubectl needs no request per group).
 */
import { type ResourceType, apiVersionOf, verbsOf } from './resource-types';

export const serverVersion = {
  major: '1',
  minor: '31',
  gitVersion: 'v1.31.0-strait',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2024-08-13T00:00:00Z',
  goVersion: 'go1.22.5',
  compiler: 'gc',
  platform: 'linux/amd64',
};

/** The Content-Type of an aggregated discovery answer (client-go switches on it). */
export const aggregatedDiscoveryType = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

/** Whether an Accept header asks for aggregated discovery v2. */
export function wantsAggregated(accept: string | undefined): boolean {
  return (accept ?? '').split(',').some((range) => {
    const params = range.split(';').map((p) => p.trim());
    return params.includes('g=apidiscovery.k8s.io') && params.includes('v=v2') && params.includes('as=APIGroupDiscoveryList');
  });
}

const statusVerbs = ['get', 'patch', 'update'];

/** The group versions served, each with its resources, core first then groups by name. */
function groupVersions(types: ResourceType[]): { group: string; version: string; types: ResourceType[] }[] {
  const byGv = new Map<string, { group: string; version: string; types: ResourceType[] }>();
  for (const type of types) {
    const key = apiVersionOf(type);
    if (!byGv.has(key)) byGv.set(key, { group: type.group, version: type.version, types: [] });
    byGv.get(key)!.types.push(type);
  }
  return [...byGv.values()].sort((a, b) => (a.group === '' ? -1 : b.group === '' ? 1 : a.group.localeCompare(b.group)));
}

export function apiVersions() {
  return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1' }] };
}

export function apiGroupList(types: ResourceType[]) {
  const groups = groupVersions(types).filter((gv) => gv.group !== '');
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: groups.map((gv) => {
      const version = { groupVersion: `${gv.group}/${gv.version}`, version: gv.version };
      return { name: gv.group, versions: [version], preferredVersion: version };
    }),
  };
}

/** The APIResourceList of `/api/v1` or `/apis/<group>/<version>`, undefined when nothing is served there. */
export function apiResourceList(types: ResourceType[], group: string, version: string) {
  const served = types.filter((t) => t.group === group && t.version === version);
  if (served.length === 0) return undefined;
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: group ? `${group}/${version}` : version,
    resources: served.flatMap((t) => [
      {
        name: t.plural,
        singularName: t.singular,
        namespaced: t.namespaced,
        kind: t.kind,
        verbs: verbsOf(t),
        ...(t.shortNames.length > 0 ? { shortNames: t.shortNames } : {}),
        ...(t.categories.length > 0 ? { categories: t.categories } : {}),
      },
      ...(t.statusSubresource
        ? [{ name: `${t.plural}/status`, singularName: '', namespaced: t.namespaced, kind: t.kind, verbs: statusVerbs }]
        : []),
    ]),
  };
}

/** The aggregated discovery document of the core group (`/api`) or of all the others (`/apis`). */
export function aggregatedDiscovery(types: ResourceType[], core: boolean) {
  const groups = groupVersions(types).filter((gv) => (gv.group === '') === core);
  return {
    kind: 'APIGroupDiscoveryList',
    apiVersion: 'apidiscovery.k8s.io/v2',
    metadata: {},
    items: groups.map((gv) => ({
      metadata: gv.group ? { name: gv.group } : {},
      versions: [
        {
          version: gv.version,
          resources: gv.types.map((t) => {
            const responseKind = { group: t.group, version: t.version, kind: t.kind };
            return {
              resource: t.plural,
              responseKind,
              scope: t.namespaced ? 'Namespaced' : 'Cluster',
              singularResource: t.singular,
              verbs: verbsOf(t),
              ...(t.shortNames.length > 0 ? { shortNames: t.shortNames } : {}),
              ...(t.categories.length > 0 ? { categories: t.categories } : {}),
              ...(t.statusSubresource ? { subresources: [{ subresource: 'status', responseKind, verbs: statusVerbs }] } : {}),
            };
          }),
          freshness: 'Current',
        },
      ],
    })),
  };
}

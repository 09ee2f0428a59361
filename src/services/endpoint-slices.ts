/**
 * The EndpointSlices of an imported service (pure): each holds the endpoints of one exporter, one address
 * family and one set of ports (KEP-1645: a slice maps to a single source cluster), at most 100 each
 * (kube-controller-manager's --max-endpoints-per-slice default).
 *
 * The plan starts from the slices there are and moves no endpoint that stays: a changed endpoint
 * rewrites the one slice that holds it, a new one fills a slice with room, a gone one empties its slice
 * only. So an endpoint change costs one write per importer whatever the service's size, where
 * repacking from scratch would shift every slice after it.
 */
import { createHash } from 'node:crypto';
import type { OfferedEndpointPort } from '../api/service-offer';
import type { AddressType, ImportedEndpoint, ImportedGroup } from './offer-check';

const maxEndpointsPerSlice = 100;

/** A slice as it is (read back) or as the plan wants it. */
export interface EndpointSliceContent {
  readonly name: string;
  readonly cluster: string;
  readonly addressType: AddressType;
  readonly ports: readonly OfferedEndpointPort[];
  readonly endpoints: readonly ImportedEndpoint[];
}

const portsKey = (ports: readonly OfferedEndpointPort[]) =>
  JSON.stringify([...ports].map((p) => [p.name ?? '', p.protocol, p.port]).sort((a, b) => String(a).localeCompare(String(b))));
const groupKey = (g: { cluster: string; addressType: AddressType; ports: readonly OfferedEndpointPort[] }) =>
  `${g.cluster} ${g.addressType} ${portsKey(g.ports)}`;

/**
 * `imported-<service>-<cluster>-<hash>-<n>`: the hash of the service and cluster keeps two pairs apart
 * whose names join alike (service `a-b` of cluster `c`, service `a` of cluster `b-c`); no slice the
 * EndpointSlice controller names (`<service>-<5 letters>`) starts so.
 */
export function importedSliceName(service: string, cluster: string, index: number): string {
  const hash = createHash('sha256').update(`${service}/${cluster}`).digest('hex').slice(0, 6);
  return `imported-${service}-${cluster}-${hash}-${index}`;
}

const byAddress = (a: ImportedEndpoint, b: ImportedEndpoint) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0);

/**
 * The slices `service` (named `serviceName`) wants, given the slices of it there are: each wanted group's
 * endpoints kept in the slice that holds them, the rest in slices with room (by name), then in new
 * slices. A slice not in the result is to be deleted.
 */
export function planEndpointSlices(
  serviceName: string,
  groups: readonly ImportedGroup[],
  existing: readonly EndpointSliceContent[],
  maxPerSlice = maxEndpointsPerSlice,
): EndpointSliceContent[] {
  const taken = new Set(existing.map((s) => s.name));
  const planned: EndpointSliceContent[] = [];
  const nextName = (cluster: string) => {
    for (let n = 0; ; n++) {
      const name = importedSliceName(serviceName, cluster, n);
      if (!taken.has(name)) {
        taken.add(name);
        return name;
      }
    }
  };
  for (const group of groups) {
    const key = groupKey(group);
    const wanted = new Map(group.endpoints.map((e) => [e.address, e]));
    const placed = new Set<string>();
    const slices = existing
      .filter((s) => groupKey(s) === key)
      .sort((a, b) => (a.name < b.name ? -1 : 1))
      .map((s) => {
        const endpoints: ImportedEndpoint[] = [];
        for (const e of s.endpoints) {
          const now = wanted.get(e.address);
          if (now && !placed.has(e.address) && endpoints.length < maxPerSlice) {
            endpoints.push(now);
            placed.add(e.address);
          }
        }
        return { name: s.name, endpoints };
      });
    const unplaced = group.endpoints.filter((e) => !placed.has(e.address));
    for (const slice of slices) while (slice.endpoints.length < maxPerSlice && unplaced.length > 0) slice.endpoints.push(unplaced.shift()!);
    while (unplaced.length > 0) slices.push({ name: nextName(group.cluster), endpoints: unplaced.splice(0, maxPerSlice) });
    for (const slice of slices)
      if (slice.endpoints.length > 0)
        planned.push({
          name: slice.name,
          cluster: group.cluster,
          addressType: group.addressType,
          ports: group.ports,
          endpoints: [...slice.endpoints].sort(byAddress),
        });
  }
  return planned.sort((a, b) => (a.name < b.name ? -1 : 1));
}

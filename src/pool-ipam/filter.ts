/**
 * Candidate pool filtering (the document's "Candidate Pool Filtering"), in its order; a pool is rejected
 * by the first filter it fails, with a sentence naming the field and the values compared:
 *   not found, terminating, disabled, family mismatch (the document's filters are per family),
 *   node (spec.nodeName, else spec.nodeAffinity), namespace (spec.namespaceName, else
 *   spec.namespaceAffinity), pod (spec.podAffinity), multus (spec.multusName), all excluded,
 *   all reserved, exhausted.
 * A name list takes precedence over the selector of the same kind (the pool reference: "nodeName has
 * higher priority than nodeAffinity"): when spec.nodeName is set, spec.nodeAffinity is not consulted.
 */
import { ipPoolNames } from '../api/resource-names';
import { formatCidr, type IpFamily } from '../net/cidr';
import { countAddresses, formatIpRanges, subtractRanges } from './ip-ranges';
import { formatSelector, selectorMatches } from './label-selector';
import type { LabelSelector, Pool, PodContext } from './model';
import { type AddressUse, freeAddresses } from './pick-address';
import { usableAddresses } from './usable-addresses';

export interface FilterResult {
  /** The candidates that passed every filter, in candidate order. */
  usable: Pool[];
  rejected: { pool: string; reason: string }[];
}

const list = (values: readonly string[]): string => JSON.stringify(values);
const labelsText = (labels: Readonly<Record<string, string>>): string => JSON.stringify(labels);

function nameOrSelector(
  field: string,
  names: readonly string[],
  selector: LabelSelector | undefined,
  subject: string,
  name: string,
  labels: Readonly<Record<string, string>>,
): string | undefined {
  if (names.length > 0) return names.includes(name) ? undefined : `spec.${field}Name ${list(names)} does not include ${subject} "${name}"`;
  if (selector && !selectorMatches(selector, labels)) {
    return `spec.${field}Affinity "${formatSelector(selector)}" does not match ${subject} "${name}" (labels ${labelsText(labels)})`;
  }
  return undefined;
}

/** Why `pool` cannot give `pod` an address of `family`, or undefined when it can. */
function rejection(pool: Pool, family: IpFamily, pod: PodContext, use: AddressUse): string | undefined {
  if (pool.terminating) return 'the pool is terminating (metadata.deletionTimestamp is set)';
  if (pool.disable) return 'spec.disable is true';
  if (pool.family !== family)
    return `the pool is IPv${pool.family} (spec.subnet ${formatCidr(pool.subnet)}) but is named as an IPv${family} candidate`;
  const node = nameOrSelector('node', pool.nodeName, pool.nodeAffinity, 'node', pod.nodeName, pod.nodeLabels);
  if (node) return node;
  const namespace = nameOrSelector(
    'namespace',
    pool.namespaceName,
    pool.namespaceAffinity,
    'namespace',
    pod.namespace,
    pod.namespaceLabels,
  );
  if (namespace) return namespace;
  if (pool.podAffinity && !selectorMatches(pool.podAffinity, pod.labels)) {
    return `spec.podAffinity "${formatSelector(pool.podAffinity)}" does not match pod "${pod.namespace}/${pod.name}" (labels ${labelsText(pod.labels)})`;
  }
  if (pool.multusName.length > 0 && !pool.multusName.includes(pod.network))
    return `spec.multusName ${list(pool.multusName)} does not include network "${pod.network}"`;
  const notExcluded = subtractRanges(pool.ips, pool.excludeIps);
  if (notExcluded.length === 0) {
    return pool.ips.length === 0
      ? 'spec.ips is empty'
      : `spec.excludeIPs ${list(formatIpRanges(pool.excludeIps))} exclude every address of spec.ips ${list(formatIpRanges(pool.ips))}`;
  }
  if (subtractRanges(notExcluded, use.reserved).length === 0) {
    return `every address of spec.ips outside spec.excludeIPs (${formatIpRanges(notExcluded).join(', ')}) is reserved by a ReservedIP`;
  }
  if (freeAddresses(pool, use).length === 0) {
    const usable = countAddresses(subtractRanges(usableAddresses(pool), use.reserved));
    if (usable === 0n)
      return 'no allocatable address: what spec.excludeIPs and ReservedIPs leave of spec.ips is only the network, broadcast or gateway address';
    return `no free address: all ${usable} allocatable addresses (spec.ips minus spec.excludeIPs, ReservedIPs, the network, broadcast and gateway addresses) are allocated or being allocated`;
  }
  return undefined;
}

/** Filters the candidates `names` of `family` (from candidates.ts) against the pod and the addresses in use. */
export function filterPools(
  family: IpFamily,
  names: readonly string[],
  pools: ReadonlyMap<string, Pool>,
  pod: PodContext,
  use: AddressUse,
): FilterResult {
  const result: FilterResult = { usable: [], rejected: [] };
  for (const name of names) {
    const pool = pools.get(name);
    const reason = pool ? rejection(pool, family, pod, use) : `${ipPoolNames.kind} "${name}" does not exist`;
    if (reason === undefined) result.usable.push(pool!);
    else result.rejected.push({ pool: name, reason });
  }
  return result;
}

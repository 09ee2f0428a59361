/**
 * Candidate pool acquisition (the document's "Candidate Pool Acquisition"): five rules in descending
 * priority; the first that names any pool for the interface being added decides the candidates of both
 * families, and no later rule is consulted (nor its annotation parsed):
 *   1. the Pod's subnet annotation (`subnets` for this interface, else `subnet`),
 *   2. the Pod's ippool annotation (`ippools` for this interface, else `ippool`),
 *   3. the Namespace's default pools,
 *   4. the CNI network configuration's default pools,
 *   5. the cluster default pools (`spec.default: true`), per family, by name.
 * A single-interface annotation applies when it names no interface or names this one.
 */
import type { IpFamily } from '../net/cidr';
import {
  type InterfaceSelection,
  checkOneSubnetPerFamily,
  defaultIpNumber,
  namespaceAnnotations,
  parseIpNumber,
  parseNamespaceDefaultPools,
  parseSelection,
  parseSelections,
  podAnnotations,
} from './annotations';
import { applicationOf, applicationPoolName } from './application-pool';
import type { Candidates, Pool, PodContext } from './model';

const namesAny = (s: { ipv4: readonly string[]; ipv6: readonly string[] }): boolean => s.ipv4.length > 0 || s.ipv6.length > 0;

/** The plural annotation's entry for `ifname`, else the singular one if it applies to `ifname`. */
function annotatedChoice(
  annotations: Readonly<Record<string, string>>,
  plural: string,
  singular: string,
  ifname: string,
): { key: string; text: string; choice: InterfaceSelection } | undefined {
  const many = annotations[plural];
  if (many !== undefined) {
    const choice = parseSelections(plural, many).find((s) => s.interface === ifname);
    if (choice && namesAny(choice)) return { key: plural, text: many, choice };
  }
  const one = annotations[singular];
  if (one !== undefined) {
    const choice = parseSelection(singular, one);
    if ((choice.interface === undefined || choice.interface === ifname) && namesAny(choice)) return { key: singular, text: one, choice };
  }
  return undefined;
}

export function candidatePools(
  pod: PodContext,
  cniDefaults: { ipv4: readonly string[]; ipv6: readonly string[] },
  pools: readonly Pool[],
): Candidates {
  const subnet = annotatedChoice(pod.annotations, podAnnotations.subnets, podAnnotations.subnet, pod.ifname);
  if (subnet) {
    checkOneSubnetPerFamily(subnet.key, subnet.text, subnet.choice);
    const numberText = pod.annotations[podAnnotations.ippoolIpNumber];
    const ipNumber = numberText === undefined ? defaultIpNumber : parseIpNumber(numberText);
    const application = applicationOf(pod);
    const poolOf = (family: IpFamily) => (name: string) => applicationPoolName(name, application, family, pod.ifname);
    return {
      source: 'subnet-annotation',
      ipv4: subnet.choice.ipv4.map(poolOf(4)),
      ipv6: subnet.choice.ipv6.map(poolOf(6)),
      subnets: { ipv4: [...subnet.choice.ipv4], ipv6: [...subnet.choice.ipv6], ipNumber },
    };
  }

  const ippool = annotatedChoice(pod.annotations, podAnnotations.ippools, podAnnotations.ippool, pod.ifname);
  if (ippool) return { source: 'ippool-annotation', ipv4: [...ippool.choice.ipv4], ipv6: [...ippool.choice.ipv6] };

  const namespaceDefault = (key: string): string[] => {
    const text = pod.namespaceAnnotations[key];
    return text === undefined ? [] : parseNamespaceDefaultPools(key, text);
  };
  const namespace = {
    ipv4: namespaceDefault(namespaceAnnotations.defaultIpv4Ippool),
    ipv6: namespaceDefault(namespaceAnnotations.defaultIpv6Ippool),
  };
  if (namesAny(namespace)) return { source: 'namespace-default', ...namespace };

  if (namesAny(cniDefaults)) return { source: 'cni-default', ipv4: [...cniDefaults.ipv4], ipv6: [...cniDefaults.ipv6] };

  const clusterDefaults = (family: IpFamily): string[] =>
    pools
      .filter((p) => p.default && p.family === family)
      .map((p) => p.name)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return { source: 'cluster-default', ipv4: clusterDefaults(4), ipv6: clusterDefaults(6) };
}

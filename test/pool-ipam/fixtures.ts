/** Pools and pods written the way an operator writes them (text addresses), for the pool IPAM core's tests. */
import { parseCidr, parseIp } from '../../src/net/cidr';
import { normalizeRanges, parseIpRanges } from '../../src/pool-ipam/ip-ranges';
import type { IpRange, Pool, PodContext, Subnet } from '../../src/pool-ipam/model';

export type PoolText = Partial<Omit<Pool, 'subnet' | 'ips' | 'excludeIps' | 'gateway'>> & {
  subnet?: string;
  ips?: string[];
  excludeIps?: string[];
  gateway?: string;
};

export function pool(name: string, text: PoolText = {}): Pool {
  const { subnet: subnetText = '10.6.0.0/24', ips = ['10.6.0.10-10.6.0.20'], excludeIps = [], gateway, ...rest } = text;
  const subnet = parseCidr('spec.subnet', subnetText);
  return {
    name,
    family: subnet.family,
    subnet,
    ips: parseIpRanges('spec.ips', ips, subnet),
    excludeIps: parseIpRanges('spec.excludeIPs', excludeIps, subnet),
    ...(gateway ? { gateway: parseIp('spec.gateway', gateway) } : {}),
    routes: [],
    default: false,
    disable: false,
    terminating: false,
    nodeName: [],
    namespaceName: [],
    multusName: [],
    ...rest,
  };
}

export function subnet(name: string, subnetText: string, ips: string[], excludeIps: string[] = [], gateway?: string): Subnet {
  const cidr = parseCidr('spec.subnet', subnetText);
  return {
    name,
    family: cidr.family,
    subnet: cidr,
    ips: parseIpRanges('spec.ips', ips, cidr),
    excludeIps: parseIpRanges('spec.excludeIPs', excludeIps, cidr),
    ...(gateway ? { gateway: parseIp('spec.gateway', gateway) } : {}),
    routes: [],
  };
}

export function pod(fields: Partial<PodContext> = {}): PodContext {
  return {
    namespace: 'shop',
    name: 'web-0',
    uid: 'uid-web-0',
    labels: { app: 'web' },
    annotations: {},
    nodeName: 'node-a',
    nodeLabels: { zone: 'east' },
    namespaceLabels: { team: 'blue' },
    namespaceAnnotations: {},
    ifname: 'eth0',
    network: 'macvlan-east',
    ...fields,
  };
}

/** Address ranges from text in any family ("10.6.0.1", "10.6.0.4-10.6.0.9", "fd00::1"), normalized. */
export function ranges(...texts: string[]): IpRange[] {
  return normalizeRanges(
    texts.map((text) => {
      const [first, last = first] = text.split('-').map((part) => parseIp('range', part));
      return { family: first!.family, first: first!.value, last: last!.value };
    }),
  );
}

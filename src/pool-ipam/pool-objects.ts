/**
 * StraitIPPool, StraitSubnet and ReservedIP objects (as the API server holds them, schema-checked) in the model the
 * pure core works on. What the schema cannot say (an address outside the subnet, a range backwards, a
 * route of the other family) is checked here, naming the object and field: such a pool is unusable and
 * every ADD that would use it says why.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { IPPoolSpecDocument } from '../api/ip-pool';
import type { ReservedIPSpecDocument } from '../api/reserved-ip';
import { ipPoolNames, subnetNames } from '../api/resource-names';
import type { SubnetSpecDocument } from '../api/subnet';
import { InputError } from '../errors';
import { type Cidr, type Ip, containsIp, formatCidr, parseCidr, parseIp } from '../net/cidr';
import { normalizeRanges, parseIpRanges } from './ip-ranges';
import { parseLabelSelector } from './label-selector';
import type { IpRange, Pool, Route, Subnet } from './model';

type Spec = Pick<IPPoolSpecDocument, 'subnet' | 'ips' | 'excludeIPs' | 'gateway' | 'routes' | 'vlan'>;

function addressing(kind: string, name: string, spec: Spec) {
  const at = (field: string) => `${kind} ${name}: spec.${field}`;
  const subnet: Cidr = parseCidr(at('subnet'), spec.subnet);
  const ips = parseIpRanges(at('ips'), spec.ips, subnet);
  const excludeIps = parseIpRanges(at('excludeIPs'), spec.excludeIPs ?? [], subnet);
  let gateway: Ip | undefined;
  if (spec.gateway !== undefined) {
    gateway = parseIp(at('gateway'), spec.gateway);
    if (gateway.family !== subnet.family || !containsIp(subnet, gateway))
      throw new InputError(at('gateway'), spec.gateway, `not an address of the subnet ${formatCidr(subnet)}`);
  }
  const routes: Route[] = (spec.routes ?? []).map((r, i) => {
    const dst = parseCidr(at(`routes[${i}].dst`), r.dst);
    if (dst.family !== subnet.family) throw new InputError(at(`routes[${i}].dst`), r.dst, `not IPv${subnet.family} like the subnet`);
    const gw = r.gw === undefined ? undefined : parseIp(at(`routes[${i}].gw`), r.gw);
    if (gw && gw.family !== subnet.family) throw new InputError(at(`routes[${i}].gw`), r.gw, `not IPv${subnet.family} like the subnet`);
    return { dst, ...(gw ? { gw } : {}) };
  });
  return {
    family: subnet.family,
    subnet,
    ips,
    excludeIps,
    ...(gateway ? { gateway } : {}),
    routes,
    ...(spec.vlan !== undefined ? { vlan: spec.vlan } : {}),
  };
}

export function readPool(object: KubernetesObject & { spec: IPPoolSpecDocument }): Pool {
  const name = object.metadata?.name ?? '';
  const { spec } = object;
  const at = (field: string) => `${ipPoolNames.kind} ${name}: spec.${field}`;
  return {
    name,
    ...addressing(ipPoolNames.kind, name, spec),
    default: spec.default ?? false,
    disable: spec.disable ?? false,
    terminating: object.metadata?.deletionTimestamp !== undefined,
    nodeName: spec.nodeName ?? [],
    ...(spec.nodeAffinity ? { nodeAffinity: parseLabelSelector(at('nodeAffinity'), spec.nodeAffinity) } : {}),
    namespaceName: spec.namespaceName ?? [],
    ...(spec.namespaceAffinity ? { namespaceAffinity: parseLabelSelector(at('namespaceAffinity'), spec.namespaceAffinity) } : {}),
    ...(spec.podAffinity ? { podAffinity: parseLabelSelector(at('podAffinity'), spec.podAffinity) } : {}),
    multusName: spec.multusName ?? [],
    ...(spec.detectConflict !== undefined ? { detectConflict: spec.detectConflict } : {}),
    ...(spec.detectGateway !== undefined ? { detectGateway: spec.detectGateway } : {}),
  };
}

export function readSubnet(object: KubernetesObject & { spec: SubnetSpecDocument }): Subnet {
  const name = object.metadata?.name ?? '';
  return { name, ...addressing(subnetNames.kind, name, object.spec) };
}

/** Every ReservedIP's addresses, both families (an entry's family is its own: no subnet to hold it to). */
export function readReservedIps(objects: readonly (KubernetesObject & { spec: ReservedIPSpecDocument })[]): IpRange[] {
  const anyOf = (family: 4 | 6): Cidr => ({ family, base: 0n, prefix: 0 });
  const ranges: IpRange[] = [];
  for (const object of objects) {
    object.spec.ips.forEach((entry, i) => {
      const family = entry.includes(':') ? 6 : 4;
      ranges.push(...parseIpRanges(`ReservedIP ${object.metadata?.name ?? ''}: spec.ips[${i}]`, [entry], anyOf(family)));
    });
  }
  return normalizeRanges(ranges);
}

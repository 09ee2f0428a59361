/**
 * The home cluster's own networks and the pools that remapped peer networks are taken from.
 * Parsed and checked once here, so the rest of the IPAM can rely on them being disjoint.
 */
import { InputError } from '../errors';
import { type Cidr, cidrsEqual, cidrsOverlap, formatCidr, parseCidr } from '../net/cidr';

export interface HomeNetworks {
  readonly podCIDR: Cidr;
  readonly serviceCIDR?: Cidr;
  readonly externalCIDR: Cidr;
  readonly reserved: readonly Cidr[];
  /** Searched in order for a free network when a peer's network must be remapped. */
  readonly pools: readonly Cidr[];
}

/** The same settings as text, as they come from the CLI or a config file and are stored. */
export interface HomeNetworksSpec {
  podCIDR: string;
  serviceCIDR?: string;
  externalCIDR: string;
  reserved?: readonly string[];
  pools?: readonly string[];
}

/** RFC 1918 for IPv4, in Liqo's order; fd00::/8 (the locally assigned half of RFC 4193 ULA) for IPv6. */
export const defaultPools: readonly string[] = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fd00::/8'];

/** Each home network with the name an operator knows it by, for error messages. */
export function namedHomeNetworks(home: HomeNetworks): { name: string; cidr: Cidr }[] {
  return [
    { name: 'podCIDR', cidr: home.podCIDR },
    ...(home.serviceCIDR ? [{ name: 'serviceCIDR', cidr: home.serviceCIDR }] : []),
    { name: 'externalCIDR', cidr: home.externalCIDR },
    ...home.reserved.map((cidr, i) => ({ name: `reserved[${i}]`, cidr })),
  ];
}

export function parseHomeNetworks(spec: HomeNetworksSpec): HomeNetworks {
  const home: HomeNetworks = {
    podCIDR: parseCidr('podCIDR', spec.podCIDR),
    ...(spec.serviceCIDR !== undefined ? { serviceCIDR: parseCidr('serviceCIDR', spec.serviceCIDR) } : {}),
    externalCIDR: parseCidr('externalCIDR', spec.externalCIDR),
    reserved: (spec.reserved ?? []).map((text) => parseCidr('reserved', text)),
    pools: (spec.pools ?? defaultPools).map((text) => parseCidr('pools', text)),
  };
  const named = namedHomeNetworks(home);
  for (let i = 0; i < named.length; i++) {
    for (let j = i + 1; j < named.length; j++) {
      const a = named[i]!;
      const b = named[j]!;
      if (cidrsOverlap(a.cidr, b.cidr)) {
        throw new InputError(
          b.name,
          formatCidr(b.cidr),
          `overlaps ${a.name} ${formatCidr(a.cidr)}; the home cluster's networks must be disjoint`,
        );
      }
    }
  }
  if (home.pools.length === 0) throw new InputError('pools', [], 'at least one pool is needed to remap overlapping peer networks');
  home.pools.forEach((pool, i) => {
    if (home.pools.findIndex((other) => cidrsEqual(other, pool)) !== i) throw new InputError('pools', formatCidr(pool), 'listed twice');
  });
  return home;
}

export function homeNetworksSpec(home: HomeNetworks): HomeNetworksSpec & { reserved: string[]; pools: string[] } {
  return {
    podCIDR: formatCidr(home.podCIDR),
    ...(home.serviceCIDR ? { serviceCIDR: formatCidr(home.serviceCIDR) } : {}),
    externalCIDR: formatCidr(home.externalCIDR),
    reserved: home.reserved.map(formatCidr),
    pools: home.pools.map(formatCidr),
  };
}

/**
 * The home cluster's own networks and the pools that remapped peer networks are taken from.
 * Parsed and checked once here, so the rest of the IPAM can rely on them being disjoint.
 */
import { InputError } from '../errors';
import { requireOtherFamily } from './secondary-family';
import { type Cidr, cidrsEqual, cidrsOverlap, formatCidr, parseCidr } from '../net/cidr';

export interface HomeNetworks {
  readonly podCIDR: Cidr;
  readonly serviceCIDR?: Cidr;
  readonly externalCIDR: Cidr;
  readonly reserved: readonly Cidr[];
  /** Searched in order for a free network when a peer's network must be remapped. */
  readonly pools: readonly Cidr[];
}

/** One family's own networks, as text. */
export interface FamilyNetworksSpec {
  podCIDR: string;
  serviceCIDR?: string;
  externalCIDR: string;
}

/**
 * The same settings as text, as they come from the CLI or a config file and are stored: the primary
 * family's networks and, on a dual-stack cluster, the secondary family's (docs/dual-stack.md). The
 * reserved networks and the pools serve both families (each is used by the family it is of).
 */
export interface HomeNetworksSpec extends FamilyNetworksSpec {
  secondary?: FamilyNetworksSpec;
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

/** `at`: where the family's networks sit in the settings (`secondary.` for the secondary family's plane). */
export function parseHomeNetworks(spec: HomeNetworksSpec, at = ''): HomeNetworks {
  const home: HomeNetworks = {
    podCIDR: parseCidr(`${at}podCIDR`, spec.podCIDR),
    ...(spec.serviceCIDR !== undefined ? { serviceCIDR: parseCidr(`${at}serviceCIDR`, spec.serviceCIDR) } : {}),
    externalCIDR: parseCidr(`${at}externalCIDR`, spec.externalCIDR),
    reserved: (spec.reserved ?? []).map((text) => parseCidr('reserved', text)),
    pools: (spec.pools ?? defaultPools).map((text) => parseCidr('pools', text)),
  };
  const family = home.podCIDR.family;
  for (const [name, cidr] of [
    ['externalCIDR', home.externalCIDR],
    ['serviceCIDR', home.serviceCIDR],
  ] as const) {
    if (cidr && cidr.family !== family)
      throw new InputError(`${at}${name}`, formatCidr(cidr), `must be IPv${family}, as ${at}podCIDR ${formatCidr(home.podCIDR)} is`);
  }
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
  if (!home.pools.some((pool) => pool.family === family))
    throw new InputError(
      'pools',
      home.pools.map(formatCidr),
      `has no IPv${family} pool; one is needed to remap peer networks that overlap ${at}podCIDR's family`,
    );
  home.pools.forEach((pool, i) => {
    if (home.pools.findIndex((other) => cidrsEqual(other, pool)) !== i) throw new InputError('pools', formatCidr(pool), 'listed twice');
  });
  return home;
}

/**
 * Every family's home networks, primary first: each parsed as its plane's (`familySpec`), the secondary
 * of the other family than the primary.
 */
export function parseFamilies(spec: HomeNetworksSpec): HomeNetworks[] {
  const primary = parseHomeNetworks(familySpec(spec, 'primary')!);
  const secondarySpec = familySpec(spec, 'secondary');
  if (!secondarySpec) return [primary];
  const secondary = parseHomeNetworks(secondarySpec, 'secondary.');
  requireOtherFamily(['podCIDR', primary.podCIDR], ['secondary.podCIDR', secondary.podCIDR]);
  return [primary, secondary];
}

/** The home settings of one family's IPAM plane (src/network-ipam/planes.ts): its networks, every reserved network and pool. */
export const familySpec = (spec: HomeNetworksSpec, family: 'primary' | 'secondary'): HomeNetworksSpec | undefined => {
  const { secondary, ...primary } = spec;
  if (family === 'primary') return primary;
  return secondary && { ...secondary, ...(spec.reserved ? { reserved: spec.reserved } : {}), ...(spec.pools ? { pools: spec.pools } : {}) };
};

export function homeNetworksSpec(home: HomeNetworks): HomeNetworksSpec & { reserved: string[]; pools: string[] } {
  return {
    podCIDR: formatCidr(home.podCIDR),
    ...(home.serviceCIDR ? { serviceCIDR: formatCidr(home.serviceCIDR) } : {}),
    externalCIDR: formatCidr(home.externalCIDR),
    reserved: home.reserved.map(formatCidr),
    pools: home.pools.map(formatCidr),
  };
}

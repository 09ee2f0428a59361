/**
 * The IPAM of a dual-stack cluster: one plane per IP family, each the single-family IPAM of
 * src/network-ipam (its own home networks, peers and ExternalCIDR addresses), so a peer's IPv6 networks
 * are kept or remapped against the IPv6 networks in use only, exactly as its IPv4 ones against the IPv4
 * ones (docs/dual-stack.md). The primary plane is the primary family's; the secondary exists on a
 * dual-stack cluster.
 */
import { type HomeNetworksSpec, familySpec } from '../api/home-networks';
import { requireOtherFamily } from '../api/secondary-family';
import { type InitializeResult, initializeIpam } from './initialize';
import type { IpamState } from './state';

export interface IpamPlanes {
  readonly primary: IpamState;
  readonly secondary?: IpamState;
}

export type PlaneName = keyof IpamPlanes;

/** The planes that exist, with their names, primary first. */
export const planesOf = (planes: IpamPlanes): [PlaneName, IpamState][] =>
  planes.secondary
    ? [
        ['primary', planes.primary],
        ['secondary', planes.secondary],
      ]
    : [['primary', planes.primary]];

/** Changes one plane; the same object when the plane did not change, so a caller saves only real changes. */
export function withPlane(planes: IpamPlanes, name: PlaneName, plane: IpamState): IpamPlanes {
  if (planes[name] === plane) return planes;
  return { ...planes, [name]: plane };
}

/**
 * Starts or resumes every plane with the home settings (initializeIpam per plane: the same rules). A
 * secondary family dropped from the settings drops its plane, and with it every peering's networks of
 * that family; one added starts empty.
 */
export function initializePlanes(
  existing: IpamPlanes | undefined,
  spec: HomeNetworksSpec,
  force = false,
): { planes: IpamPlanes; result: InitializeResult } {
  // Each family's settings parsed once, by its plane (a reconcile does this every round).
  const primary = initializeIpam(existing?.primary, familySpec(spec, 'primary')!, force);
  const secondarySpec = familySpec(spec, 'secondary');
  const secondary = secondarySpec && initializeIpam(existing?.secondary, secondarySpec, force, 'secondary.');
  if (secondary) requireOtherFamily(['podCIDR', primary.state.home.podCIDR], ['secondary.podCIDR', secondary.state.home.podCIDR]);
  const migrated = [
    ...primary.result.migrated,
    ...(secondary?.result.migrated.map((m) => `secondary.${m}`) ?? []),
    ...(existing?.secondary && !secondary ? ['secondary'] : []),
  ];
  const created = primary.result.created;
  const unchanged = existing && primary.state === existing.primary && secondary?.state === existing.secondary;
  const planes: IpamPlanes = unchanged ? existing : { primary: primary.state, ...(secondary ? { secondary: secondary.state } : {}) };
  return { planes, result: { created, migrated } };
}

/**
 * The IP families this kernel lets the chosen dataplane carry (`strait probe`, per family): a spec of a
 * family it cannot, in its networks or its underlay, is refused whole, naming the family's PodCIDR (or
 * the node's underlay address) and what the kernel lacks, before
 * anything is programmed, rather than failing half-way through an apply.
 */
import { InputError } from '../errors';
import { type IpFamily, formatCidr, formatIp } from '../net/cidr';
import { familiesOf, homeNetworks } from './families';
import type { NodeDataplaneSpec } from './spec';

/** Per family this kernel cannot carry on the chosen dataplane, what it lacks. */
export type FamiliesUnavailable = Partial<Record<IpFamily, string>>;

export function requireKernelFamilies(spec: NodeDataplaneSpec, unavailable: FamiliesUnavailable, dataplane: string): void {
  // The tunnels' own family (one per spec: ip-family.ts) needs its routes as much as the pods' families do.
  const underlay = spec.node.underlayAddress;
  const lacksUnderlay = unavailable[underlay.family];
  if (lacksUnderlay !== undefined)
    throw new InputError(
      'spec.node.underlayAddress',
      formatIp(underlay),
      `this kernel lacks what ${dataplane} needs to tunnel over IPv${underlay.family}: ${lacksUnderlay}`,
    );
  for (const family of familiesOf(spec)) {
    const lacks = unavailable[family];
    if (lacks === undefined) continue;
    const field = spec.podCIDR.family === family ? 'spec.podCIDR' : 'spec.secondary.podCIDR';
    throw new InputError(
      field,
      formatCidr(homeNetworks(spec, family)!.podCIDR),
      `this kernel lacks what ${dataplane} needs to carry IPv${family}: ${lacks}`,
    );
  }
}

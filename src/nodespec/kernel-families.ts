/**
 * The IP families this kernel lets the chosen dataplane carry (`strait probe`, per family): a spec of a
 * family it cannot is refused whole, naming the family's PodCIDR and what the kernel lacks, before
 * anything is programmed, rather than failing half-way through an apply.
 */
import { InputError } from '../errors';
import { type IpFamily, formatCidr } from '../net/cidr';
import { familiesOf, homeNetworks } from './families';
import type { NodeDataplaneSpec } from './spec';

/** Per family this kernel cannot carry on the chosen dataplane, what it lacks. */
export type FamiliesUnavailable = Partial<Record<IpFamily, string>>;

export function requireKernelFamilies(spec: NodeDataplaneSpec, unavailable: FamiliesUnavailable, dataplane: string): void {
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

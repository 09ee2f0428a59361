/**
 * StraitSubnet: addresses from which the pool IPAM makes an application's own StraitIPPool on demand (a pod annotated
 * `ipam.strait.io/subnet`). The status records which addresses went to which pool: a pool is carved
 * only after its addresses are recorded here under the StraitSubnet's resourceVersion, so two applications
 * never get the same address (one write per application, not per pod).
 */
import { type Static, Type } from '@sinclair/typebox';
import type { ResourceDefinition } from './resource';
import { ipPoolNames, subnetNames } from './resource-names';
import { CidrText, IpText, List, Strict } from './schema';
import { IpList, ObjectName, PoolRoutes, Vlan, addressColumns, addressCounts } from './pool-ipam-schema';

export const SubnetSpecSchema = Strict({
  subnet: CidrText({ description: 'The underlay subnet.' }),
  ips: IpList('The addresses application pools are made from.'),
  excludeIPs: Type.Optional(IpList('Addresses of ips never given.')),
  gateway: Type.Optional(IpText()),
  routes: Type.Optional(PoolRoutes()),
  vlan: Type.Optional(Vlan()),
});

export const SubnetStatusSchema = Strict({
  allocations: Type.Optional(
    List(Strict({ pool: ObjectName(`A ${ipPoolNames.kind} made from this ${subnetNames.kind}.`), ips: IpList('Its addresses.') }), {
      description: 'Addresses given to application pools.',
    }),
  ),
  ...addressCounts,
});

export type SubnetSpecDocument = Static<typeof SubnetSpecSchema>;
export type SubnetStatusDocument = Static<typeof SubnetStatusSchema>;

export const subnetResource: ResourceDefinition<typeof SubnetSpecSchema, typeof SubnetStatusSchema> = {
  ...subnetNames,
  shortNames: ['ssubnet'],
  description: `Underlay addresses from which applications get their own ${ipPoolNames.kind} on demand.`,
  spec: SubnetSpecSchema,
  status: SubnetStatusSchema,
  columns: addressColumns,
};

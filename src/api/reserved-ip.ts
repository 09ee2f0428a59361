/** ReservedIP: addresses no pool gives, whatever the pool says (a router, a VIP, a host outside the cluster). */
import { type Static, Type } from '@sinclair/typebox';
import type { ResourceDefinition } from './resource';
import { ipPoolNames, reservedIpNames } from './resource-names';
import { Strict } from './schema';
import { IpList } from './pool-ipam-schema';

export const ReservedIPSpecSchema = Strict({
  ips: IpList('Addresses and ranges never given to a pod.'),
  reason: Type.Optional(Type.String({ description: 'Why: what uses them (a router, a VIP, a host outside the cluster).' })),
});

export type ReservedIPSpecDocument = Static<typeof ReservedIPSpecSchema>;

export const reservedIpResource: ResourceDefinition<typeof ReservedIPSpecSchema, undefined> = {
  ...reservedIpNames,
  shortNames: ['sreservedip'],
  description: `Addresses no ${ipPoolNames.kind} gives to a pod.`,
  spec: ReservedIPSpecSchema,
  status: undefined,
  columns: [
    { name: 'IPs', type: 'string', jsonPath: '.spec.ips' },
    { name: 'Reason', type: 'string', jsonPath: '.spec.reason' },
  ],
};

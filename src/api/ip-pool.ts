/**
 * StraitIPPool: addresses of one underlay subnet that pods may be given, and who may take them (node, namespace,
 * pod and network affinities). Written by a person (or by the pool IPAM, for an application's pool made
 * from a StraitSubnet); its status counts are written by the node services, off the allocation path.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { ResourceDefinition } from './resource';
import { ipPoolNames } from './resource-names';
import { CidrText, IpText, List, NodeNameText, Strict } from './schema';
import { IpList, LabelSelector, ObjectName, PoolRoutes, Vlan, addressColumns, addressCounts } from './pool-ipam-schema';

export const IPPoolSpecSchema = Strict({
  subnet: CidrText({ description: 'The underlay subnet: the prefix length handed to pods.' }),
  ips: IpList('The addresses pods may be given (inside subnet).'),
  excludeIPs: Type.Optional(IpList('Addresses of ips never given.')),
  gateway: Type.Optional(IpText({ description: 'The default gateway handed to pods (never given as an address).' })),
  routes: Type.Optional(PoolRoutes()),
  vlan: Type.Optional(Vlan()),
  default: Type.Optional(Type.Boolean({ description: 'A cluster default pool: tried when nothing else names a pool.' })),
  disable: Type.Optional(Type.Boolean({ description: 'Nothing more is given from this pool (releases still happen).' })),
  nodeName: Type.Optional(List(NodeNameText(), { description: 'Only pods on these nodes.' })),
  nodeAffinity: Type.Optional(LabelSelector('Only pods on nodes with these labels.')),
  namespaceName: Type.Optional(List(ObjectName('A namespace.'), { description: 'Only pods of these namespaces.' })),
  namespaceAffinity: Type.Optional(LabelSelector('Only pods of namespaces with these labels.')),
  podAffinity: Type.Optional(LabelSelector('Only pods with these labels.')),
  multusName: Type.Optional(
    List(Type.String({ minLength: 1 }), {
      description: 'Only attachments of these networks (the CNI config name or Multus NetworkAttachmentDefinition).',
    }),
  ),
  detectConflict: Type.Optional(Type.Boolean({ description: 'ARP/NDP-probe an address before giving it (default: the CNI config).' })),
  detectGateway: Type.Optional(
    Type.Boolean({ description: 'ARP/NDP-probe the gateway before giving an address (default: the CNI config).' }),
  ),
});

export const IPPoolStatusSchema = Strict(addressCounts);

export type IPPoolSpecDocument = Static<typeof IPPoolSpecSchema>;
export type IPPoolStatusDocument = Static<typeof IPPoolStatusSchema>;

export const ipPoolResource: ResourceDefinition<typeof IPPoolSpecSchema, typeof IPPoolStatusSchema> = {
  ...ipPoolNames,
  shortNames: ['sippool'],
  description: 'Underlay addresses pods may be given, and which pods may take them.',
  spec: IPPoolSpecSchema,
  status: IPPoolStatusSchema,
  columns: [
    ...addressColumns,
    { name: 'Default', type: 'boolean', jsonPath: '.spec.default' },
    { name: 'Disable', type: 'boolean', jsonPath: '.spec.disable', priority: 1 },
    { name: 'Gateway', type: 'string', jsonPath: '.spec.gateway', priority: 1 },
  ],
};

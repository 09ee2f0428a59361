/**
 * StraitEndpoint: the pool IPAM's record of one pod (in the pod's namespace, named after it): its addresses per
 * interface, pools, node, controller and uid. A StatefulSet pod's StraitEndpoint outlives the pod's incarnations
 * (its next one, on any node, gets the same addresses); a stateless pod's goes with the pod.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { ResourceDefinition } from './resource';
import { endpointNames, ipPoolNames } from './resource-names';
import { IpText, List, NodeNameText, Strict } from './schema';
import { ObjectName, OwnerRef, Vlan } from './pool-ipam-schema';

export const EndpointSpecSchema = Strict({
  podUID: Type.String({ description: 'The incarnation the addresses are attached to now.' }),
  node: NodeNameText(),
  owner: Type.Optional(OwnerRef()),
  attachments: List(
    Strict({
      network: Type.String({ minLength: 1 }),
      ifname: Type.String({ minLength: 1, maxLength: 15 }),
      containerID: Type.Optional(Type.String()),
      ips: List(
        Strict({
          address: IpText(),
          prefixLength: Type.Integer({ minimum: 0, maximum: 128 }),
          pool: ObjectName(`The ${ipPoolNames.kind}.`),
          gateway: Type.Optional(IpText()),
          vlan: Type.Optional(Vlan()),
        }),
      ),
    }),
    { description: 'One per interface of the pod given addresses.' },
  ),
});

export type EndpointSpecDocument = Static<typeof EndpointSpecSchema>;

export const endpointResource: ResourceDefinition<typeof EndpointSpecSchema, undefined> = {
  ...endpointNames,
  shortNames: ['sep'],
  description: "The pool IPAM's record of a pod: its addresses, pools, node, controller and uid.",
  scope: 'Namespaced',
  spec: EndpointSpecSchema,
  status: undefined,
  columns: [
    { name: 'Interface', type: 'string', jsonPath: '.spec.attachments[0].ifname' },
    { name: 'IPv4 Pool', type: 'string', jsonPath: '.spec.attachments[0].ips[0].pool' },
    { name: 'Address', type: 'string', jsonPath: '.spec.attachments[0].ips[0].address' },
    { name: 'Node', type: 'string', jsonPath: '.spec.node' },
    { name: 'Owner', type: 'string', jsonPath: '.spec.owner.kind', priority: 1 },
  ],
};

/**
 * IPClaim: one given address, named after it (`10.6.0.2`, `fd00-0-0-0-0-0-0-2`). The API server creates
 * one object of a name at most, so two nodes that pick the same address race on this one name and the
 * second create is a 409: double allocation is impossible without any object shared by all allocations
 * (no pool-wide list to update per pod, as Spiderpool's allocatedIPs and whereabouts' lease are). Written
 * and deleted by the node services (on CNI ADD/DEL and by garbage collection).
 */
import { type Static, Type } from '@sinclair/typebox';
import type { ResourceDefinition } from './resource';
import { ipClaimNames, ipPoolNames } from './resource-names';
import { IpText, MacText, NodeNameText, Strict } from './schema';
import { ObjectName, OwnerRef } from './pool-ipam-schema';

export const IPClaimSpecSchema = Strict({
  address: IpText(),
  pool: ObjectName(`The ${ipPoolNames.kind} it was given from.`),
  podNamespace: ObjectName("The pod's namespace."),
  podName: ObjectName('The pod.'),
  podUID: Type.String({ description: "The pod incarnation it was given to (a StatefulSet pod's next incarnation takes it over)." }),
  node: NodeNameText({ description: 'Where the pod was when the address was given.' }),
  network: Type.String({ minLength: 1, description: "The CNI network's name." }),
  ifname: Type.String({ minLength: 1, maxLength: 15, description: "The pod's interface." }),
  containerID: Type.Optional(
    Type.String({ description: 'The attachment (CNI_CONTAINERID); absent while a StatefulSet pod is between incarnations.' }),
  ),
  owner: Type.Optional(OwnerRef()),
  conflict: Type.Optional(
    Strict(
      { mac: Type.Optional(MacText()), detectedAt: Type.String({ format: 'date-time' }) },
      { description: 'Another host answered the ARP/NDP probe for the address: held for nobody until garbage collection frees it.' },
    ),
  ),
});

export type IPClaimSpecDocument = Static<typeof IPClaimSpecSchema>;

export const ipClaimResource: ResourceDefinition<typeof IPClaimSpecSchema, undefined> = {
  ...ipClaimNames,
  shortNames: ['sipclaim'],
  description: 'One address given to a pod, named after the address: the API server refuses a second claim of it.',
  spec: IPClaimSpecSchema,
  status: undefined,
  columns: [
    { name: 'Address', type: 'string', jsonPath: '.spec.address' },
    { name: 'Pool', type: 'string', jsonPath: '.spec.pool' },
    { name: 'Namespace', type: 'string', jsonPath: '.spec.podNamespace' },
    { name: 'Pod', type: 'string', jsonPath: '.spec.podName' },
    { name: 'Node', type: 'string', jsonPath: '.spec.node' },
    { name: 'Container', type: 'string', jsonPath: '.spec.containerID', priority: 1 },
    { name: 'Conflict', type: 'string', jsonPath: '.spec.conflict.mac', priority: 1 },
  ],
};

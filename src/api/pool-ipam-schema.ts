/** Schema pieces the pool IPAM's resources share (StraitIPPool, StraitSubnet, ReservedIP, StraitEndpoint, IPClaim). */
import { Type } from '@sinclair/typebox';
import type { PrinterColumn } from './resource';
import { CidrText, IpText, List, Strict, StringEnum } from './schema';

/** An address or an inclusive range of addresses: `10.6.0.2`, `10.6.0.10-10.6.0.20`, `fd00::2-fd00::ff`. */
const IpOrRangeText = () =>
  Type.String({
    pattern: '^[0-9a-fA-F:.]+(-[0-9a-fA-F:.]+)?$',
    description: 'An address (10.6.0.2) or an inclusive range of addresses (10.6.0.10-10.6.0.20).',
  });

export const IpList = (description: string) => List(IpOrRangeText(), { description });

export const PoolRoutes = () =>
  List(Strict({ dst: CidrText(), gw: Type.Optional(IpText()) }), { description: 'Routes handed to the pod with the address.' });

/** metav1.LabelSelector. */
export const LabelSelector = (description: string) =>
  Strict(
    {
      matchLabels: Type.Optional(Type.Record(Type.String(), Type.String())),
      matchExpressions: Type.Optional(
        List(
          Strict({
            key: Type.String({ minLength: 1 }),
            operator: StringEnum(['In', 'NotIn', 'Exists', 'DoesNotExist']),
            values: Type.Optional(List(Type.String())),
          }),
        ),
      ),
    },
    { description },
  );

export const Vlan = () =>
  Type.Integer({ minimum: 0, maximum: 4094, description: 'The VLAN the pool is on (0: untagged); handed to the pod with the address.' });

/** A Kubernetes object name (DNS-1123 subdomain). */
export const ObjectName = (description: string) =>
  Type.String({ minLength: 1, maxLength: 253, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$', description });

/** The controller of a pod (its controller ownerReference). */
export const OwnerRef = () =>
  Strict(
    { apiVersion: Type.String(), kind: Type.String(), name: Type.String(), uid: Type.String() },
    { description: "The pod's controller (a StatefulSet pod keeps its addresses across restarts)." },
  );

/** The status counts of a pool of addresses (a StraitIPPool, a StraitSubnet): written off the allocation path. */
export const addressCounts = {
  allocatedIPCount: Type.Optional(Type.Integer({ minimum: 0 })),
  totalIPCount: Type.Optional(Type.Integer({ minimum: 0 })),
};

/** The columns of a pool of addresses in `kubectl get`: its subnet and counts. */
export const addressColumns: PrinterColumn[] = [
  { name: 'Subnet', type: 'string', jsonPath: '.spec.subnet' },
  { name: 'Allocated', type: 'integer', jsonPath: '.status.allocatedIPCount' },
  { name: 'Total', type: 'integer', jsonPath: '.status.totalIPCount' },
];

/**
 * The StraitGateway resource: its spec schema, the spec's document type, its CRD's columns. The controller
 * writes it (`writeGateways`, node-dataplane.ts); each agent adds it to its NodeDataplane (k8s/gateway-view.ts).
 */
import { type Static, Type } from '@sinclair/typebox';
import type { ResourceDefinition } from './resource';
import { straitGatewayNames } from './resource-names';
import { ClusterIdText, IpText, List, NodeNameText, Port, StandbyAddresses, Strict } from './schema';
import { maxStandbyGateways } from '../nodespec/spec';

export const StraitGatewaySpecSchema = Strict(
  {
    activeGateway: Strict(
      { name: NodeNameText(), underlayAddress: IpText() },
      { description: 'The node every other node of the cluster sends cross-cluster traffic to, at its underlay address.' },
    ),
    standbyGateways: Type.Optional(
      List(NodeNameText(), {
        maxItems: maxStandbyGateways,
        description:
          'The other gateway candidates, in the order nodes fail over to them when the active gateway stops answering their probes (no write needed: each node decides from its own probes).',
      }),
    ),
    peers: List(
      Strict({
        clusterId: ClusterIdText(),
        endpoint: Strict(
          { address: IpText(), port: Port(), standbyAddresses: Type.Optional(StandbyAddresses()) },
          { description: "The peer gateway's tunnel address and port." },
        ),
      }),
      { description: "Each established peering's gateway, sorted by clusterId." },
    ),
  },
  { description: 'Which node is our gateway and where each peer gateway is.' },
);

export type StraitGatewaySpecDocument = Static<typeof StraitGatewaySpecSchema>;

export const straitGatewayResource: ResourceDefinition<typeof StraitGatewaySpecSchema, undefined> = {
  ...straitGatewayNames,
  shortNames: ['sgw'],
  description:
    "The cluster's gateways, one object named after the cluster (the controller): which node is ours and where each peer's is. Every agent reads it beside its NodeDataplane, so a gateway move, here or in a peer, is one write.",
  spec: StraitGatewaySpecSchema,
  status: undefined,
  columns: [
    { name: 'Gateway', type: 'string', jsonPath: '.spec.activeGateway.name' },
    { name: 'Address', type: 'string', jsonPath: '.spec.activeGateway.underlayAddress' },
    { name: 'Standby', type: 'string', jsonPath: '.spec.standbyGateways' },
  ],
};

/** The schemas of the controller's status and of the endpoints it reflects (controller-status.ts). */
import { type Static, Type } from '@sinclair/typebox';
import { peerStates } from './peer-states';
import { ClusterIdText, IpText, List, NodeNameText, StringEnum, Strict } from './schema';

export const ControllerStatusSchema = Strict({
  clusterId: ClusterIdText(),
  gateway: NodeNameText({ description: 'The elected gateway.' }),
  peers: List(
    Strict({
      clusterId: ClusterIdText(),
      state: StringEnum([...peerStates]),
      reason: Type.Optional(Type.String({ description: "Why the peering is refused, or why the peer's answer cannot be used." })),
    }),
  ),
  readyNodes: List(NodeNameText()),
  time: Type.String({ format: 'date-time' }),
});

const ReflectionSchema = Strict({
  to: ClusterIdText({ description: 'The peer the endpoint is reflected to.' }),
  fromPeer: ClusterIdText({ description: 'The peer the endpoint belongs to.' }),
  podIP: IpText({ description: "The endpoint in fromPeer's own view." }),
  endpoint: IpText({ description: 'The endpoint as this (hub) cluster sees it.' }),
  address: IpText({ description: 'What a pod in `to` dials to reach it.' }),
});

export const ReflectionListSchema = List(ReflectionSchema);

export type ControllerStatus = Static<typeof ControllerStatusSchema>;
export type Reflection = Static<typeof ReflectionSchema>;

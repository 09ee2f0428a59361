/**
 * The schema of the controller's configuration file (controller-config.ts reads it); the chart's values
 * take the settings they hand to the controller from it (chart-values.ts).
 */
import { type Static, Type } from '@sinclair/typebox';
import { CidrText, ClusterIdText, IpText, List, NodeNameText, Seconds, StringEnum, Strict, TunnelMtu } from './schema';

export const ControllerConfigSchema = Strict({
  clusterId: ClusterIdText(),
  runDir: Type.Optional(
    Type.String({ minLength: 1, description: 'The run directory standing in for the API server (default /run/strait/lab).' }),
  ),
  podCIDR: CidrText({
    description: "The cluster's PodCIDR of its primary IP family (IPv4, or IPv6 on an IPv6-only or IPv6-first cluster).",
  }),
  externalCIDR: CidrText(),
  serviceCIDR: Type.Optional(CidrText()),
  secondary: Type.Optional(
    Strict(
      { podCIDR: CidrText(), externalCIDR: CidrText(), serviceCIDR: Type.Optional(CidrText()) },
      {
        description:
          "Dual-stack: the cluster's networks of its secondary IP family (the other one); peers that have both are peered in both families, matched by value.",
      },
    ),
  ),
  reserved: Type.Optional(List(CidrText(), { description: 'Networks in use here that peers must not be given.' })),
  pools: Type.Optional(List(CidrText(), { description: 'Where remapped peer networks are taken from, in order.' })),
  peers: Type.Optional(
    List(Type.Union([ClusterIdText(), Strict({ clusterId: ClusterIdText(), encryption: Type.Optional(StringEnum(['none', 'ipsec'])) })]), {
      description: 'The clusters to peer with: a cluster id, or {clusterId, encryption: none|ipsec}.',
    }),
  ),
  reflections: Type.Optional(
    List(
      Strict({
        to: ClusterIdText(),
        fromPeer: ClusterIdText(),
        podIP: IpText({ description: "In fromPeer's own view (its CNI's address)." }),
      }),
    ),
  ),
  nodes: Type.Optional(
    List(
      Strict({
        name: NodeNameText(),
        underlayAddress: IpText(),
        podCIDRs: Type.Optional(List(CidrText())),
        publicAddress: Type.Optional(IpText()),
        gatewayCandidate: Type.Optional(Type.Boolean({ description: 'May be elected the gateway (default true).' })),
      }),
      {
        minItems: 1,
        description: 'The nodes of the cluster (at least one gateway candidate). Standalone only: on Kubernetes they are the Node objects.',
      },
    ),
  ),
  gatewayNodeSelector: Type.Optional(
    Type.Record(
      Type.String({
        pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$',
      }),
      Type.String({ pattern: '^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$', maxLength: 63 }),
      {
        minProperties: 1,
        description: `Kubernetes only: the Nodes whose labels match all of these may be elected the gateway (default {"${'strait.io/gateway-candidate'}": "true"}).`,
      },
    ),
  ),
  heartbeatTimeout: Type.Optional(Seconds('Seconds without a fresh Ready heartbeat after which a node is not Ready (default 1.5).')),
  interval: Type.Optional(Seconds('Seconds between reconciles (default 0.2).')),
  tunnelMTU: Type.Optional(TunnelMtu()),
});

export type ControllerConfigDocument = Static<typeof ControllerConfigSchema>;

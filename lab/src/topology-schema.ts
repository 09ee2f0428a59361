/** The schema of a lab topology file (topology.ts reads it). */
import { type Static, Type } from '@sinclair/typebox';
import { CidrText, ClusterIdText, List, StringEnum, Strict } from '../../src/api/schema';
import { defaultMtu, maximumMtu, minimumMtu } from './link-mtu';

const LabName = () => Type.String({ format: 'lab-name' });
const Pair = () => List(ClusterIdText(), { minItems: 2, maxItems: 2 });

/** The topology file's shape; what it cannot say (names used once, pods inside nodes...) is checked by its reader. */
export const LabTopologySchema = Strict({
  public: CidrText({ description: "The public network between the clusters' gateways." }),
  mtu: Type.Optional(
    Type.Integer({
      minimum: minimumMtu,
      maximum: maximumMtu,
      description: `The MTU of the underlays, the public network and the pods (default ${defaultMtu}).`,
    }),
  ),
  clusters: List(
    Strict({
      id: ClusterIdText(),
      podCIDR: CidrText(),
      externalCIDR: CidrText(),
      serviceCIDR: Type.Optional(CidrText({ description: "The cluster's service network: where its ClusterSetIPs come from." })),
      secondary: Type.Optional(
        Strict(
          { podCIDR: CidrText(), externalCIDR: CidrText(), serviceCIDR: Type.Optional(CidrText()) },
          { description: "Dual-stack: the cluster's networks of its other IP family; each node then has a secondaryPodCIDR." },
        ),
      ),
      underlay: CidrText({ description: "The cluster's node network." }),
      dataplane: Type.Optional(StringEnum(['ebpf', 'kernel'])),
      nodes: List(
        Strict({
          name: LabName(),
          podCIDR: CidrText(),
          secondaryPodCIDR: Type.Optional(
            CidrText({ description: "Dual-stack: the node's pod network of the secondary family, inside the cluster's." }),
          ),
          pods: Type.Optional(List(LabName())),
        }),
        {
          minItems: 1,
          maxItems: 9,
          description: "At most 9: each cluster numbers its nodes' public addresses in a decade of its own (11-19 for the first).",
        },
      ),
    }),
  ),
  peerings: Type.Optional(
    List(Type.Union([Pair(), Strict({ between: Pair(), encryption: Type.Optional(StringEnum(['none', 'ipsec'])) })])),
  ),
  reflections: Type.Optional(List(Strict({ hub: ClusterIdText(), to: ClusterIdText(), pod: LabName() }))),
  services: Type.Optional(
    List(
      Strict({
        name: Type.String({ format: 'service-name' }),
        namespace: Type.Optional(Type.String({ format: 'dns-label', description: 'Default: default.' })),
        cluster: ClusterIdText({ description: 'The exporting cluster.' }),
        pods: List(LabName(), { minItems: 1, description: "The service's endpoints: pods of the exporting cluster." }),
      }),
      {
        description:
          'Services exported (Multi-Cluster Services, docs/services.md): each imported by its cluster and every peer of it; one name exported by several clusters is one service.',
      },
    ),
  ),
});

export type LabTopologyDocument = Static<typeof LabTopologySchema>;

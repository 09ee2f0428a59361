/**
 * The LabState of a lab on Kubernetes: read from each cluster's API server, as `kubectl get` would.
 * NodeDataplanes give the specs, with the node list each agent makes from the Node objects (the object
 * holds none), the agents' statuses and the gateway; each ready agent's /metrics the whole spec it runs; the established peerings' TunnelEndpoints (with their prefixes); a hub's
 * NatMappings its reflections, turned into the addresses its peers dial with the hub's own node spec
 * (each peer's view of our ExternalCIDR, and which peer an endpoint belongs to).
 */
import { CoreV1Api, CustomObjectsApi, type V1Node } from '@kubernetes/client-node';
import type { Reflection } from '../../src/api/controller-status';
import type { NatMappingSpec } from '../../src/api/ipam-objects';
import { type NodeDataplaneStatus, readNodeDataplane, readNodeDataplaneStatus } from '../../src/api/node-dataplane';
import { group, natMappingNames, nodeDataplaneNames, straitGatewayNames, tunnelEndpointNames, version } from '../../src/api/resource-names';
import { withGateways } from '../../src/k8s/gateway-view';
import { withNodeListFrom } from '../../src/k8s/node-list';
import { containsIp, formatIp, parseCidr, parseIp, translateIp } from '../../src/net/cidr';
import type { NodeDataplaneSpec } from '../../src/nodespec/spec';
import { clusterKubeConfig } from './kubernetes-control-plane';
import { labMetricsPort, runningSpec } from './metrics-endpoint';
import type { ClusterState, LabState, NodeState } from './lab-state-port';
import type { LabCluster, LabTopology } from './topology';

/** How long one agent's /metrics may take: a loaded machine's agent answers in milliseconds. */
const scrapeTimeoutMs = 2_000;

interface Listed {
  items: { metadata: { name: string }; spec?: unknown; status?: unknown }[];
}

/** Reflections of a hub from its NatMappings, in the form the standalone controller writes them. */
function reflectionsOf(topology: LabTopology, hub: NodeDataplaneSpec, natMappings: readonly NatMappingSpec[]): Reflection[] {
  const reflections: Reflection[] = [];
  for (const m of natMappings) {
    const endpoint = parseIp('endpointAddress', m.endpointAddress);
    const from = hub.peers.find((p) => containsIp(p.remotePodCIDR, endpoint));
    if (!from) continue; // a local pod mapped for peers: not a reflection
    const ownPodCIDR = parseCidr('podCIDR', topology.clusters.find((c) => c.id === from.clusterId)!.podCIDR);
    const podIP = formatIp(translateIp(endpoint, from.remotePodCIDR, ownPodCIDR));
    for (const to of m.reflectedTo) {
      const peer = hub.peers.find((p) => p.clusterId === to);
      if (!peer) continue;
      const address = formatIp(translateIp(parseIp('externalAddress', m.externalAddress), hub.externalCIDR, peer.localNATExternalCIDR));
      reflections.push({ to, fromPeer: from.clusterId, podIP, endpoint: m.endpointAddress, address });
    }
  }
  return reflections;
}

export class KubernetesLabState implements LabState {
  private readonly apis = new Map<string, { custom: CustomObjectsApi; core: CoreV1Api }>();

  constructor(
    private readonly runDir: string,
    private readonly topology: LabTopology,
  ) {}

  private api(cluster: string): { custom: CustomObjectsApi; core: CoreV1Api } {
    let api = this.apis.get(cluster);
    if (!api) {
      const kubeConfig = clusterKubeConfig(this.runDir, cluster);
      api = { custom: kubeConfig.makeApiClient(CustomObjectsApi), core: kubeConfig.makeApiClient(CoreV1Api) };
      this.apis.set(cluster, api);
    }
    return api;
  }

  private async list(cluster: string, plural: string): Promise<Listed['items']> {
    return ((await this.api(cluster).custom.listClusterCustomObject({ group, version, plural })) as Listed).items;
  }

  async read(cluster: LabCluster): Promise<ClusterState> {
    const [dataplanes, gateways, tunnels, natMappings, clusterNodes] = await Promise.all([
      this.list(cluster.id, nodeDataplaneNames.plural),
      this.list(cluster.id, straitGatewayNames.plural),
      this.list(cluster.id, tunnelEndpointNames.plural),
      this.list(cluster.id, natMappingNames.plural),
      this.api(cluster.id)
        .core.listNode()
        .then((l): V1Node[] => l.items),
    ]);
    const nodes = new Map<string, NodeState>();
    const ours = gateways.find((g) => g.metadata.name === cluster.id);
    for (const node of cluster.nodes) {
      const object = dataplanes.find((o) => o.metadata.name === node.name);
      let spec: NodeDataplaneSpec | undefined;
      let status: NodeDataplaneStatus | undefined;
      try {
        // The spec its agent applies: with the node list made from the Nodes and the gateways of the
        // cluster's StraitGateway, as the agent makes it.
        if (object) spec = readNodeDataplane(withGateways(withNodeListFrom(object, clusterNodes), ours)).spec;
      } catch {
        spec = undefined; // not one we can use: as if not written yet
      }
      try {
        if (object?.status) status = readNodeDataplaneStatus(object.status);
      } catch {
        status = undefined;
      }
      const running = status?.ready ? await runningSpec(labMetricsPort(this.topology, `agent-${node.name}`), scrapeTimeoutMs) : undefined;
      nodes.set(node.name, { ...(spec ? { spec } : {}), ...(status ? { status } : {}), ...(running === undefined ? {} : { running }) });
    }
    const anySpec = [...nodes.values()].find((n) => n.spec)?.spec;
    // Every configured peer has a TunnelEndpoint; an established peering's has its prefixes.
    const ready = new Set(
      tunnels.filter((t) => (t.spec as { remotePodCIDR?: string }).remotePodCIDR !== undefined).map((t) => t.metadata.name),
    );
    const peers = this.topology.peerings.filter((p) => p.includes(cluster.id)).map(([a, b]) => (a === cluster.id ? b : a));
    return {
      nodes,
      reflections: anySpec
        ? reflectionsOf(
            this.topology,
            anySpec,
            natMappings.map((m) => m.spec as NatMappingSpec),
          )
        : [],
      // Services are the standalone control plane's so far (labUp refuses them on Kubernetes).
      imports: [],
      gateway: anySpec?.activeGateway.name ?? null,
      peers: peers.map((clusterId) => ({ clusterId, state: ready.has(clusterId) ? 'ready' : 'waiting-for-peer' })),
    };
  }

  async close(): Promise<void> {
    this.apis.clear();
  }
}

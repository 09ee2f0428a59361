/**
 * The agent's NodeDataplane from the API server, with the node list and the gateways it does not hold:
 * three informers (list, then watch). One on the cluster-scoped nodedataplanes with the field selector
 * metadata.name=<node>, so the agent gets its own object and nothing else; one on the core Nodes, from
 * which the agent makes the node list itself (k8s/node-list.ts, the controller's reading of Nodes), so a
 * Node added rewrites no NodeDataplane; one on the straitgateways (one per cluster, named after it), so a
 * gateway move, ours or a peer's, is one write (k8s/gateway-view.ts). read() answers from the caches:
 * while the API server is unreachable they keep the last objects, so the datapath does not change, and
 * the informers reconnect (and relist) by themselves. An object deleted (seen by a watch or a relist) is
 * "no spec": the agent keeps the last good one.
 *
 * The agent is told of a change when its NodeDataplane's spec changed, the node list did or its
 * cluster's StraitGateway did: a Node's status heartbeat, anything else of a Node Strait does not read,
 * or the agent's own status write costs no reconcile. The status acknowledges the object's own part only
 * (`ownPartText`): a gateway move or a Node added reaches every agent and costs no status write.
 */
import { type KubeConfig, type KubernetesObject, type V1Node } from '@kubernetes/client-node';
import { type ClusterNodeDocument, canonicalObjectSpecText } from '../../api/node-dataplane';
import { nodeDataplaneNames, straitGatewayNames } from '../../api/resource-names';
import { Informer } from '../../k8s/informer';
import { clusterIdText, withGateways } from '../../k8s/gateway-view';
import { nodeInformer } from '../../k8s/node-fields';
import { nodeList, parsePodCIDR, podCIDRText, withNodeList } from '../../k8s/node-list';
import { straitInformer } from '../../k8s/strait-informer';
import type { Logger } from '../../log';
import type { SpecDocument, SpecSource } from '../control-plane-port';

export interface KubernetesSpecSourceOptions {
  kubeConfig: KubeConfig;
  nodeName: string;
  log: Logger;
}

export class KubernetesSpecSource implements SpecSource {
  readonly where: Record<string, string>;
  readonly ownPartText = canonicalObjectSpecText;
  private readonly dataplanes: Informer<KubernetesObject>;
  private readonly nodes: Informer<V1Node>;
  private readonly gateways: Informer<KubernetesObject>;
  /** Counts the changes of the Node cache, so the node list is made again only after one. */
  private nodesVersion = 0;
  /** The node list last made, for which PodCIDR and Node cache version (`key`), and as text to compare. */
  private made?: { key: string; text: string; list: ClusterNodeDocument[] };
  /** Counts the changes of the node list: part of the document's version. */
  private listVersion = 0;
  private pending?: NodeJS.Immediate;
  /** Set once the three caches are filled: the agent reads then, and is told of changes only after. */
  private filled = false;
  /** `specVersion()` when last told (or first read). */
  private toldSpec?: string;
  /** `gatewaysVersion()` when last told (or first read). */
  private toldGateways?: string;
  private onChange?: () => void;

  constructor(private readonly options: KubernetesSpecSourceOptions) {
    const { kubeConfig, nodeName, log } = options;
    const fieldSelector = `metadata.name=${nodeName}`;
    const plural = nodeDataplaneNames.plural;
    this.where = { nodeDataplane: `${plural}/${nodeName}`, nodeList: 'nodes', gateways: straitGatewayNames.plural };
    this.dataplanes = straitInformer<KubernetesObject>(kubeConfig, plural, { fieldSelector, log });
    // The agent's own status writes come back as changes of its object: only another object or a new
    // generation (a new spec) is one to tell.
    this.dataplanes.onChange(() => {
      const spec = this.specVersion();
      if (spec === this.toldSpec) return;
      this.toldSpec = spec;
      this.tell();
    });
    // Another cluster's StraitGateway (none in a real cluster) changes nothing here.
    this.gateways = straitInformer<KubernetesObject>(kubeConfig, straitGatewayNames.plural, { log });
    this.gateways.onChange(() => {
      const gateways = this.gatewaysVersion();
      if (gateways === this.toldGateways) return;
      this.toldGateways = gateways;
      this.tell();
    });
    this.nodes = nodeInformer(kubeConfig, log);
    // A relist (a thousand changes at once) makes the list once.
    this.nodes.onChange(() => {
      this.nodesVersion += 1;
      this.pending ??= setImmediate(() => {
        this.pending = undefined;
        const before = this.listVersion;
        const object = this.dataplanes.get(nodeName);
        if (object !== undefined) this.nodeListFor(podCIDRText(object));
        if (this.listVersion !== before) this.tell();
      });
    });
  }

  /** Which object and spec the cache holds: uid and generation (resourceVersion where there is no generation). */
  private specVersion(): string {
    const { uid, generation, resourceVersion } = this.dataplanes.get(this.options.nodeName)?.metadata ?? {};
    return uid === undefined ? '' : `${uid}/${generation ?? `rv ${resourceVersion ?? ''}`}`;
  }

  /** Our cluster's StraitGateway, named in our NodeDataplane. */
  private ourGateways(): KubernetesObject | undefined {
    const object = this.dataplanes.get(this.options.nodeName);
    const clusterId = object === undefined ? undefined : clusterIdText(object);
    return clusterId === undefined ? undefined : this.gateways.get(clusterId);
  }

  /** Which StraitGateway the cache holds for our cluster (`gateways`: the one read): uid and resourceVersion. */
  private gatewaysVersion(gateways = this.ourGateways()): string {
    const { uid, resourceVersion } = gateways?.metadata ?? {};
    return uid === undefined ? '' : `${uid}/${resourceVersion ?? ''}`;
  }

  /** The node list for the cluster PodCIDR `podCIDR`, made again only when it or a Node changed; undefined when it is no CIDR. */
  private nodeListFor(podCIDR: string | undefined): ClusterNodeDocument[] | undefined {
    const cidr = parsePodCIDR(podCIDR);
    if (cidr === undefined) return undefined;
    const key = `${podCIDR} ${this.nodesVersion}`;
    if (this.made?.key !== key) {
      const list = nodeList(this.nodes.list(), cidr);
      const text = JSON.stringify(list);
      if (text !== this.made?.text) this.listVersion += 1;
      this.made = { key, text, list };
    }
    return this.made.list;
  }

  read(): SpecDocument | undefined {
    const object = this.dataplanes.get(this.options.nodeName);
    if (object === undefined) return undefined;
    const nodes = this.nodeListFor(podCIDRText(object));
    // This node's agent runs, so its Node exists: a list without it is incomplete (an API server that
    // came back empty, its Nodes not registered again yet), and applying it would drop every route.
    if (nodes !== undefined && !nodes.some((n) => n.name === this.options.nodeName)) {
      throw new Error(
        `Node ${this.options.nodeName} is not among the ${nodes.length} usable Nodes read: the node list is incomplete, the spec in force stays`,
      );
    }
    const { uid, resourceVersion, generation } = object.metadata ?? {};
    const gateways = this.ourGateways();
    // The uid too: an API server that lost its state counts resourceVersions from 1 again.
    return {
      version: `${uid ?? ''}/${resourceVersion ?? ''}/${this.listVersion}/${this.gatewaysVersion(gateways)}`,
      ...(generation === undefined ? {} : { generation }),
      // Without a PodCIDR to read the Nodes for, the object as it is: its reader says what is wrong.
      parse: () => withGateways(nodes === undefined ? object : withNodeList(object, nodes), gateways),
    };
  }

  /**
   * Not before the three caches are filled: the first list of one would have the agent apply its object
   * with the node list of a cache still empty (every other node dropped), or no spec at all.
   */
  private tell(): void {
    if (this.filled) this.onChange?.();
  }

  /** The informers watch (and reconnect) by themselves: this only says whom to tell. */
  watch(onChange: () => void): void {
    this.onChange = onChange;
  }

  /** Once the three caches are filled. */
  async ready(): Promise<void> {
    await Promise.all([this.dataplanes.start(), this.nodes.start(), this.gateways.start()]);
    this.toldSpec = this.specVersion();
    this.toldGateways = this.gatewaysVersion();
    this.filled = true;
  }

  close(): void {
    clearImmediate(this.pending);
    void this.dataplanes.stop();
    void this.nodes.stop();
    void this.gateways.stop();
  }
}

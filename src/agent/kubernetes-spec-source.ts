/**
 * The agent's NodeDataplane from the API server: an informer (list, then watch) on the cluster-scoped
 * nodedataplanes with the field selector metadata.name=<node>, so the agent gets its own object and
 * nothing else. read() answers from the informer's cache: while the API server is unreachable the cache
 * keeps the last object, so the datapath does not change, and the informer reconnects (and relists) by
 * itself. An object deleted (seen by a watch or a relist) is "no spec": the agent keeps the last good one.
 */
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { nodeDataplaneResource } from '../api/node-dataplane';
import type { Informer } from '../k8s/informer';
import { straitInformer } from '../k8s/strait-informer';
import type { Logger } from '../log';
import type { SpecDocument, SpecSource } from './spec-source';

export interface KubernetesSpecSourceOptions {
  kubeConfig: KubeConfig;
  nodeName: string;
  log: Logger;
}

export class KubernetesSpecSource implements SpecSource {
  readonly where: Record<string, string>;
  private readonly informer: Informer<KubernetesObject>;
  private onChange?: () => void;

  constructor(private readonly options: KubernetesSpecSourceOptions) {
    const { nodeName, log } = options;
    const fieldSelector = `metadata.name=${nodeName}`;
    const { plural } = nodeDataplaneResource;
    this.where = { nodeDataplane: `${plural}/${nodeName}` };
    this.informer = straitInformer<KubernetesObject>(options.kubeConfig, plural, { fieldSelector, log });
    this.informer.onChange(() => this.onChange?.());
  }

  read(): SpecDocument | undefined {
    const object = this.informer.get(this.options.nodeName);
    if (object === undefined) return undefined;
    const { uid, resourceVersion, generation } = object.metadata ?? {};
    // The uid too: an API server that lost its state counts resourceVersions from 1 again.
    return { version: `${uid ?? ''}/${resourceVersion ?? ''}`, ...(generation === undefined ? {} : { generation }), parse: () => object };
  }

  /** The informer watches (and reconnects) by itself: this only says whom to tell. */
  watch(onChange: () => void): void {
    this.onChange = onChange;
  }

  ready(): Promise<void> {
    return this.informer.start();
  }

  close(): void {
    void this.informer.stop();
  }
}

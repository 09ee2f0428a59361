/**
 * Writes of StraitEndpoints (one per pod, in its namespace): the attachment an ADD gave addresses to, and its
 * removal on DEL. Read-modify-write with the resourceVersion, again on a 409.
 */
import { type CustomObjectsApi } from '@kubernetes/client-node';
import type { EndpointSpecDocument } from '../../api/pool-endpoint';
import { apiVersion, endpointNames, group, version } from '../../api/resource-names';
import { apiStatus } from '../../k8s/api-errors';
import type { EndpointObject } from './cluster-view';

const { kind, plural } = endpointNames;
type Attachment = EndpointSpecDocument['attachments'][number];

export interface EndpointHolder {
  namespace: string;
  name: string;
  podUID: string;
  node: string;
  owner?: EndpointSpecDocument['owner'];
}

export class EndpointWriter {
  constructor(private readonly api: CustomObjectsApi) {}

  private async read(namespace: string, name: string): Promise<EndpointObject | undefined> {
    try {
      return (await this.api.getNamespacedCustomObject({ group, version, namespace, plural, name })) as EndpointObject;
    } catch (err) {
      if (apiStatus(err) === 404) return undefined;
      throw err;
    }
  }

  /** Changes the StraitEndpoint's spec by `change` (undefined: delete it), retrying on conflicts. */
  private async modify(
    namespace: string,
    name: string,
    change: (current: EndpointSpecDocument | undefined) => EndpointSpecDocument | undefined | 'unchanged',
  ): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const current = await this.read(namespace, name);
      const next = change(current?.spec);
      try {
        if (next === 'unchanged') return;
        if (next === undefined) {
          if (current)
            await this.api.deleteNamespacedCustomObject({
              group,
              version,
              namespace,
              plural,
              name,
              body: { preconditions: { resourceVersion: current.metadata?.resourceVersion } },
            });
        } else if (current) {
          const body = {
            apiVersion,
            kind,
            metadata: { name, namespace, resourceVersion: current.metadata?.resourceVersion },
            spec: next,
          };
          await this.api.replaceNamespacedCustomObject({ group, version, namespace, plural, name, body });
        } else {
          await this.api.createNamespacedCustomObject({
            group,
            version,
            namespace,
            plural,
            body: { apiVersion, kind, metadata: { name, namespace }, spec: next },
          });
        }
        return;
      } catch (err) {
        const status = apiStatus(err);
        if (attempt >= 8 || (status !== 409 && !(status === 404 && next === undefined))) throw err;
        if (status === 404) return;
      }
    }
  }

  /** The pod's record of the attachment on `network` and `ifname`, read from the API server (not a cache that may lag a write). */
  async attachment(namespace: string, name: string, network: string, ifname: string): Promise<Attachment | undefined> {
    const current = await this.read(namespace, name);
    return current?.spec.attachments.find((a) => a.network === network && a.ifname === ifname);
  }

  /** Records the attachment's addresses (replacing what the pod's earlier incarnation had on this interface). */
  attach(holder: EndpointHolder, attachment: Attachment): Promise<void> {
    return this.modify(holder.namespace, holder.name, (current) => {
      const others = (current?.attachments ?? []).filter((a) => !(a.network === attachment.network && a.ifname === attachment.ifname));
      return {
        podUID: holder.podUID,
        node: holder.node,
        ...(holder.owner ? { owner: holder.owner } : {}),
        attachments: [...others, attachment],
      };
    });
  }

  /** Removes the attachment (keep: only its containerID, for a StatefulSet pod); the StraitEndpoint goes with its last attachment. */
  detach(namespace: string, name: string, network: string, ifname: string, keep: boolean): Promise<void> {
    return this.modify(namespace, name, (current) => {
      if (!current) return 'unchanged';
      const same = (a: Attachment) => a.network === network && a.ifname === ifname;
      if (!current.attachments.some(same)) return 'unchanged';
      const attachments = keep
        ? current.attachments.map((a) => (same(a) ? (({ containerID: _c, ...rest }) => rest)(a) : a))
        : current.attachments.filter((a) => !same(a));
      return attachments.length === 0 ? undefined : { ...current, attachments };
    });
  }

  /** Removes the attachment if it is still the container's (never a later incarnation's). */
  detachContainer(namespace: string, name: string, network: string, ifname: string, containerID: string): Promise<void> {
    return this.modify(namespace, name, (current) => {
      if (!current) return 'unchanged';
      const attachments = current.attachments.filter(
        (a) => !(a.network === network && a.ifname === ifname && a.containerID === containerID),
      );
      if (attachments.length === current.attachments.length) return 'unchanged';
      return attachments.length === 0 ? undefined : { ...current, attachments };
    });
  }

  /** Deletes an outdated StraitEndpoint (garbage collection), unless it changed since it was read. */
  async remove(namespace: string, name: string, uid: string): Promise<void> {
    try {
      await this.api.deleteNamespacedCustomObject({ group, version, namespace, plural, name, body: { preconditions: { uid } } });
    } catch (err) {
      const status = apiStatus(err);
      if (status !== 404 && status !== 409) throw err;
    }
  }
}

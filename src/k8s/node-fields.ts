/**
 * What Strait keeps of a Node in its caches (an informer transform, as client-go's SetTransform): the
 * fields cluster-nodes.ts reads, and nothing else. A Node is mostly what Strait never reads (its images,
 * managedFields, capacity, daemon endpoints, every condition's heartbeat time): every agent holds every
 * Node, so this is most of the memory its cache takes. Without the heartbeat times, a kubelet's status
 * report that changes nothing Strait reads is no change to the cache, and the agent does not rebuild
 * its node list for it.
 *
 * Neither a metadata-only watch (PartialObjectMetadata) nor a watch of the agent's own Node by name can
 * replace the full watch: the node list needs every Node's spec.podCIDRs, status.addresses and Ready.
 */
import { CoreV1Api, type KubeConfig, type V1Node } from '@kubernetes/client-node';
import type { Logger } from '../log';
import { publicAddressAnnotation } from './cluster-nodes';
import { Informer } from './informer';

export function nodeReadFields(node: V1Node): V1Node {
  const { name, uid, resourceVersion, labels, annotations } = node.metadata ?? {};
  const publicAddress = annotations?.[publicAddressAnnotation];
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  return {
    metadata: {
      ...(name !== undefined ? { name } : {}),
      ...(uid !== undefined ? { uid } : {}),
      ...(resourceVersion !== undefined ? { resourceVersion } : {}),
      // Every label: the controller's gatewayNodeSelector may name any.
      ...(labels ? { labels } : {}),
      ...(publicAddress !== undefined ? { annotations: { [publicAddressAnnotation]: publicAddress } } : {}),
    },
    spec: {
      ...(node.spec?.podCIDR !== undefined ? { podCIDR: node.spec.podCIDR } : {}),
      ...(node.spec?.podCIDRs !== undefined ? { podCIDRs: node.spec.podCIDRs } : {}),
    },
    status: {
      ...(node.status?.addresses ? { addresses: node.status.addresses } : {}),
      ...(ready ? { conditions: [{ type: ready.type, status: ready.status }] } : {}),
    },
  };
}

/** The cluster's Nodes, as the agent and the controller cache them (the fields above). */
export function nodeInformer(kubeConfig: KubeConfig, log?: Logger): Informer<V1Node> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  return new Informer<V1Node>({
    kubeConfig,
    path: '/api/v1/nodes',
    list: (page) => core.listNode(page),
    transform: nodeReadFields,
    ...(log ? { log } : {}),
  });
}

/**
 * The gateways of a NodeDataplane on Kubernetes, where the controller does not store them in it (a
 * gateway move would rewrite every node's object): the cluster's StraitGateway, one object named after
 * the cluster, holds our active gateway and each peer's. The agent adds them to its NodeDataplane before
 * reading it, as it adds the node list (node-list.ts), so its datapath gets the same typed spec as from a
 * spec file; the lab does the same to know which spec an agent should have applied. Pure.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { checkCompiled } from '../api/compiled-validators';
import { straitGatewayNames } from '../api/resource-names';

type SpecObject = KubernetesObject & { spec?: unknown };

/** The `spec.clusterId` text of a NodeDataplane: the name of its cluster's StraitGateway. */
export function clusterIdText(object: SpecObject): string | undefined {
  const text = (object.spec as { clusterId?: unknown } | undefined)?.clusterId;
  return typeof text === 'string' ? text : undefined;
}

/**
 * The object with `spec.activeGateway`, `spec.standbyGateways` and each peer's `endpoint` from `gateways` (the StraitGateway
 * is the truth, whatever the object holds); as it is without one (its reader says what is missing). A
 * StraitGateway that is not one throws, naming it and the field.
 */
export function withGateways<T extends SpecObject>(object: T, gateways: SpecObject | undefined): T {
  if (gateways === undefined) return object;
  const where = `${straitGatewayNames.kind} ${gateways.metadata?.name ?? ''}: spec`;
  const { activeGateway, standbyGateways, peers } = checkCompiled('straitGatewaySpec', gateways.spec, where);
  const endpoints = new Map(peers.map((p) => [p.clusterId, p.endpoint]));
  const spec = (object.spec ?? {}) as { peers?: unknown };
  // The object is not checked yet: a peer that is no object, or names no listed cluster, stays as it is.
  const withEndpoint = (peer: unknown) => {
    if (typeof peer !== 'object' || peer === null) return peer;
    const endpoint = endpoints.get((peer as { clusterId?: unknown }).clusterId as string);
    return endpoint === undefined ? peer : { ...peer, endpoint };
  };
  return {
    ...object,
    spec: {
      ...spec,
      activeGateway,
      standbyGateways: standbyGateways ?? [],
      ...(Array.isArray(spec.peers) ? { peers: spec.peers.map(withEndpoint) } : {}),
    },
  };
}

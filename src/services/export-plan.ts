/**
 * The exporter's plan (pure): what a ServiceExport offers to every peer, made from the exported Service
 * and its EndpointSlices, in this cluster's own numbering (each importer translates: offer-check.ts); and
 * the ServiceExport's conditions, from its Service and from the peers' answers on their offers.
 */
import type { ConditionValue } from '../api/conditions';
import type { EndpointGroup, OfferedEndpoint, OfferedEndpointPort, ServiceOfferSpec } from '../api/service-offer';
import { type Cidr, type Ip, containsIp, formatIp, parseIp } from '../net/cidr';

/** What the exporter reads of the exported Service (core/v1 Service). */
export interface LocalService {
  readonly type?: string;
  readonly clusterIP?: string;
  readonly ports?: readonly { name?: string; protocol?: string; port: number; appProtocol?: string }[];
  readonly sessionAffinity?: string;
  readonly sessionAffinityTimeoutSeconds?: number;
}

/** What the exporter reads of one of its EndpointSlices (discovery/v1). */
export interface LocalEndpointSlice {
  readonly addressType: string;
  readonly ports?: readonly { name?: string; protocol?: string; port?: number }[];
  readonly endpoints: readonly {
    addresses: readonly string[];
    conditions?: { ready?: boolean; serving?: boolean; terminating?: boolean };
    hostname?: string;
    zone?: string;
  }[];
}

export interface ServiceExportRef {
  readonly namespace: string;
  readonly name: string;
  /** The ServiceExport's creationTimestamp. */
  readonly created: string;
}

/** An offer without whom it is from and for: the same for every peer. */
type OfferContent = Omit<ServiceOfferSpec, 'clusterId' | 'remoteClusterId'>;

export interface ExportPlan {
  /** Condition `Valid`. */
  readonly valid: ConditionValue;
  /** Undefined where the export is not valid: nothing is offered, and offers made before are withdrawn. */
  readonly offer?: OfferContent;
  /** Endpoints outside this cluster's PodCIDRs (host-network pods), which no peer can reach and no offer lists, or no address at all. */
  readonly leftOut: readonly string[];
}

const protocolOf = (protocol: string | undefined): OfferedEndpointPort['protocol'] =>
  protocol === 'UDP' || protocol === 'SCTP' ? protocol : 'TCP';

const invalid = (reason: string, message: string): ExportPlan => ({
  valid: { type: 'Valid', status: 'False', reason, message },
  leftOut: [],
});

/**
 * The endpoints of the slices, grouped by their ports: an endpoint's conditions as kube-proxy reads them
 * (ready and serving unset mean true; terminating unset means false), each address once per ports.
 */
function endpointGroups(slices: readonly LocalEndpointSlice[], podCIDRs: readonly Cidr[], leftOut: Set<string>): EndpointGroup[] {
  const groups = new Map<string, { ports: OfferedEndpointPort[]; endpoints: Map<string, OfferedEndpoint> }>();
  for (const slice of slices) {
    if (slice.addressType !== 'IPv4' && slice.addressType !== 'IPv6') continue;
    const ports = (slice.ports ?? [])
      .filter((p): p is { name?: string; protocol?: string; port: number } => p.port !== undefined)
      .map((p) => ({ ...(p.name ? { name: p.name } : {}), protocol: protocolOf(p.protocol), port: p.port }))
      .sort((a, b) => (a.name ?? '').localeCompare(b.name ?? '') || a.port - b.port);
    const key = JSON.stringify(ports);
    const group = groups.get(key) ?? { ports, endpoints: new Map() };
    groups.set(key, group);
    for (const endpoint of slice.endpoints) {
      const text = endpoint.addresses[0];
      if (text === undefined) continue;
      let ip: Ip;
      try {
        ip = parseIp('endpoints[].addresses[0]', text);
      } catch {
        // The API server refuses such an address; a file standing in for it may hold one.
        leftOut.add(`${JSON.stringify(text)} (no IP address)`);
        continue;
      }
      const address = formatIp(ip);
      if (!podCIDRs.some((cidr) => containsIp(cidr, ip))) {
        leftOut.add(address);
        continue;
      }
      const ready = endpoint.conditions?.ready ?? true;
      const offered: OfferedEndpoint = {
        address,
        ready,
        serving: endpoint.conditions?.serving ?? ready,
        terminating: endpoint.conditions?.terminating ?? false,
        ...(endpoint.hostname ? { hostname: endpoint.hostname } : {}),
        ...(endpoint.zone ? { zone: endpoint.zone } : {}),
      };
      // The same address in two slices while the EndpointSlice controller moves it: the ready one counts.
      const before = group.endpoints.get(address);
      if (!before || (!before.ready && offered.ready)) group.endpoints.set(address, offered);
    }
  }
  return [...groups.keys()]
    .sort()
    .map((key) => groups.get(key)!)
    .filter((g) => g.endpoints.size > 0)
    .map((g) => ({ ports: g.ports, endpoints: [...g.endpoints.values()].sort((a, b) => (a.address < b.address ? -1 : 1)) }));
}

/** The offer of `exported` (KEP-1645: an ExternalName service or a missing one is not exportable). */
export function planExport(
  exported: ServiceExportRef,
  service: LocalService | undefined,
  slices: readonly LocalEndpointSlice[],
  podCIDRs: readonly Cidr[],
): ExportPlan {
  if (!service) return invalid('NoService', `service ${exported.namespace}/${exported.name} does not exist`);
  if (service.type === 'ExternalName')
    return invalid(
      'InvalidServiceType',
      `service ${exported.namespace}/${exported.name} is of type ExternalName, which has no endpoints to export`,
    );
  const leftOut = new Set<string>();
  const clientIp = service.sessionAffinity === 'ClientIP';
  const offer: OfferContent = {
    namespace: exported.namespace,
    name: exported.name,
    exportCreated: exported.created,
    type: service.clusterIP === 'None' ? 'Headless' : 'ClusterSetIP',
    ports: (service.ports ?? []).map((p) => ({
      ...(p.name ? { name: p.name } : {}),
      protocol: protocolOf(p.protocol),
      port: p.port,
      ...(p.appProtocol ? { appProtocol: p.appProtocol } : {}),
    })),
    sessionAffinity: clientIp ? 'ClientIP' : 'None',
    ...(clientIp && service.sessionAffinityTimeoutSeconds !== undefined
      ? { sessionAffinityTimeoutSeconds: service.sessionAffinityTimeoutSeconds }
      : {}),
    endpointGroups: endpointGroups(slices, podCIDRs, leftOut),
  };
  return {
    valid: { type: 'Valid', status: 'True', reason: 'Valid', message: `service ${exported.namespace}/${exported.name} is exported` },
    offer,
    leftOut: [...leftOut].sort(),
  };
}

/**
 * An importer's latest answer on its offer, undefined while it has never answered. An answer about an
 * earlier generation of the offer stands until the next: the service stays imported while an endpoint
 * change travels, so its export is not Pending at every change.
 */
export interface PeerAnswer {
  readonly peer: string;
  readonly conditions?: readonly ConditionValue[];
}

const condition = (answer: PeerAnswer, type: string) => answer.conditions?.find((c) => c.type === type);

/**
 * The ServiceExport's conditions: `Valid`; `Ready` (Exported once every peer imported it, Failed with
 * each refusal, Pending while a peer has not answered); `Conflict` (what the importers found; KEP-1645
 * sets it on every export of a conflicted service).
 */
export function exportConditions(plan: ExportPlan, answers: readonly PeerAnswer[]): ConditionValue[] {
  if (plan.valid.status !== 'True')
    return [plan.valid, { type: 'Ready', status: 'False', reason: 'Failed', message: 'the export is not valid' }];
  const leftOut = plan.leftOut.length > 0 ? `; not offered (no pod addresses): ${plan.leftOut.join(', ')}` : '';
  const refusals = answers.flatMap((a) => {
    const imported = condition(a, 'Imported');
    return imported?.status === 'False' ? [`${a.peer}: ${imported.reason}: ${imported.message}`] : [];
  });
  const waiting = answers.filter((a) => condition(a, 'Imported') === undefined).map((a) => a.peer);
  const ready: ConditionValue =
    refusals.length > 0
      ? { type: 'Ready', status: 'False', reason: 'Failed', message: `not imported by ${refusals.join('; ')}${leftOut}` }
      : waiting.length > 0
        ? { type: 'Ready', status: 'Unknown', reason: 'Pending', message: `waiting for ${waiting.join(', ')} to import it${leftOut}` }
        : {
            type: 'Ready',
            status: 'True',
            reason: 'Exported',
            message: `imported by ${answers.map((a) => a.peer).join(', ') || 'no cluster yet'}${leftOut}`,
          };
  const conflicts = answers.flatMap((a) => {
    const found = condition(a, 'Conflict');
    return found?.status === 'True' ? [{ peer: a.peer, reason: found.reason, message: found.message }] : [];
  });
  const conflict: ConditionValue =
    conflicts.length > 0
      ? {
          type: 'Conflict',
          status: 'True',
          reason: conflicts[0]!.reason,
          message: conflicts.map((c) => `${c.peer}: ${c.message}`).join('; '),
        }
      : { type: 'Conflict', status: 'False', reason: 'NoConflict', message: 'no importer found a conflict' };
  return [plan.valid, ready, conflict];
}

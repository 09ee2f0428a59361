/**
 * What an importer takes from a peer's ServiceOffer: the checks its schema cannot make (ports a Service
 * can have, addresses the exporter owns), and its endpoints in the importer's numbering. A peer is
 * untrusted: an offer that fails any check is refused whole (an InputError naming the field), so an
 * import never holds part of one.
 */
import { InputError } from '../errors';
import { formatIp, parseIp } from '../net/cidr';
import {
  type OfferedEndpoint,
  type OfferedEndpointPort,
  type OfferedServicePort,
  type ServiceOfferSpec,
  maxOfferedEndpoints,
} from '../api/service-offer';
import { type PodTranslation, translatePodAddress } from './pod-translation';

export type AddressType = 'IPv4' | 'IPv6';

/** An endpoint as the importer lists it: its address in the importer's view. */
export type ImportedEndpoint = OfferedEndpoint;

/** Endpoints of one exporter that share their address family and ports: what one or more EndpointSlices hold. */
export interface ImportedGroup {
  readonly cluster: string;
  readonly addressType: AddressType;
  readonly ports: readonly OfferedEndpointPort[];
  readonly endpoints: readonly ImportedEndpoint[];
}

/** An offer that passed every check, its endpoints translated. */
export interface CheckedOffer {
  readonly cluster: string;
  readonly namespace: string;
  readonly name: string;
  readonly exportCreated: string;
  readonly type: ServiceOfferSpec['type'];
  readonly ports: readonly OfferedServicePort[];
  readonly sessionAffinity: ServiceOfferSpec['sessionAffinity'];
  readonly sessionAffinityTimeoutSeconds?: number;
  readonly groups: readonly ImportedGroup[];
}

const portText = (p: { protocol: string; port: number }) => `${p.protocol}/${p.port}`;

/** No two ports of one name (unnamed counts as a name) nor of one protocol and number. */
function requireUniquePorts(root: string, ports: readonly { name?: string; protocol: string; port: number }[]): void {
  const names = new Map<string, number>();
  const numbers = new Map<string, number>();
  ports.forEach((p, i) => {
    const name = p.name ?? '';
    const sameName = names.get(name);
    if (sameName !== undefined) throw new InputError(`${root}[${i}].name`, p.name ?? '', `is also the name of ${root}[${sameName}]`);
    const sameNumber = numbers.get(portText(p));
    if (sameNumber !== undefined) throw new InputError(`${root}[${i}]`, portText(p), `is also ${root}[${sameNumber}]`);
    names.set(name, i);
    numbers.set(portText(p), i);
  });
}

/** The Service's ports, as core/v1 validation takes them (every port named where there are several). */
function checkServicePorts(spec: ServiceOfferSpec, root: string): void {
  if (spec.type === 'ClusterSetIP' && spec.ports.length === 0)
    throw new InputError(`${root}.ports`, [], 'a ClusterSetIP service needs at least one port');
  if (spec.ports.length > 1) {
    const unnamed = spec.ports.findIndex((p) => p.name === undefined);
    if (unnamed >= 0)
      throw new InputError(`${root}.ports[${unnamed}].name`, undefined, 'is required where a service has more than one port');
  }
  requireUniquePorts(`${root}.ports`, spec.ports);
  if (spec.sessionAffinityTimeoutSeconds !== undefined && spec.sessionAffinity !== 'ClientIP')
    throw new InputError(
      `${root}.sessionAffinityTimeoutSeconds`,
      spec.sessionAffinityTimeoutSeconds,
      'is for sessionAffinity ClientIP only',
    );
}

/**
 * `spec` checked and translated with the exporter's translations, or an InputError naming the first
 * field at fault. An endpoint outside the exporter's PodCIDRs is refused: the exporter may only offer
 * what it owns, and a translation leaves no other address reachable.
 */
export function checkOffer(spec: ServiceOfferSpec, translations: readonly PodTranslation[], root = 'spec'): CheckedOffer {
  checkServicePorts(spec, root);
  let total = 0;
  // Keyed by family and ports: two groups of one offer with the same ports are one set of endpoints.
  const groups = new Map<string, ImportedGroup & { endpoints: ImportedEndpoint[]; addresses: Set<string> }>();
  spec.endpointGroups.forEach((group, g) => {
    const groupRoot = `${root}.endpointGroups[${g}]`;
    requireUniquePorts(`${groupRoot}.ports`, group.ports);
    total += group.endpoints.length;
    if (total > maxOfferedEndpoints)
      throw new InputError(`${root}.endpointGroups`, total, `an offer lists at most ${maxOfferedEndpoints} endpoints`);
    // By value, in one order: the same ports are one group however a peer wrote them.
    const portsKey = JSON.stringify(
      group.ports.map((p) => [p.name ?? '', p.protocol, p.port]).sort((a, b) => String(a).localeCompare(String(b))),
    );
    group.endpoints.forEach((endpoint, e) => {
      const field = `${groupRoot}.endpoints[${e}].address`;
      const own = parseIp(field, endpoint.address);
      const translated = translatePodAddress(own, translations);
      if (!translated)
        throw new InputError(field, endpoint.address, `is not a pod address of cluster ${spec.clusterId} (outside its PodCIDRs)`);
      const addressType: AddressType = own.family === 4 ? 'IPv4' : 'IPv6';
      const groupKey = `${addressType} ${portsKey}`;
      const into = groups.get(groupKey) ?? {
        cluster: spec.clusterId,
        addressType,
        ports: group.ports,
        endpoints: [],
        addresses: new Set(),
      };
      groups.set(groupKey, into);
      const address = formatIp(translated);
      if (into.addresses.has(address)) throw new InputError(field, endpoint.address, 'is listed twice with the same ports');
      into.addresses.add(address);
      into.endpoints.push({ ...endpoint, address });
    });
  });
  return {
    cluster: spec.clusterId,
    namespace: spec.namespace,
    name: spec.name,
    exportCreated: spec.exportCreated,
    type: spec.type,
    ports: spec.ports,
    sessionAffinity: spec.sessionAffinity,
    ...(spec.sessionAffinityTimeoutSeconds !== undefined ? { sessionAffinityTimeoutSeconds: spec.sessionAffinityTimeoutSeconds } : {}),
    groups: [...groups.values()].map(({ cluster, addressType, ports, endpoints }) => ({ cluster, addressType, ports, endpoints })),
  };
}

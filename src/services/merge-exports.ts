/**
 * One imported Service from the exports of several clusters, by KEP-1645's conflict rules: ports are the
 * union of the exports' ports, merged by name and then by protocol and number; the type (ClusterSetIP or
 * Headless) and the session affinity are one for the whole service. Where exports disagree, the oldest
 * export (its ServiceExport's creationTimestamp; then the cluster id, so every importer decides alike)
 * wins, and every export of the service is told of the conflict.
 */
import type { OfferedServicePort } from '../api/service-offer';
import type { CheckedOffer } from './offer-check';

/** A KEP-1645 conflict reason (ServiceExportConditionReason). */
type ConflictReason = 'PortConflict' | 'TypeConflict' | 'SessionAffinityConflict' | 'SessionAffinityConfigConflict';

interface ExportConflict {
  readonly reason: ConflictReason;
  readonly message: string;
}

export interface MergedService {
  readonly type: CheckedOffer['type'];
  readonly ports: readonly OfferedServicePort[];
  readonly sessionAffinity: CheckedOffer['sessionAffinity'];
  readonly sessionAffinityTimeoutSeconds?: number;
  readonly conflicts: readonly ExportConflict[];
}

/** Oldest export first; the cluster id orders exports of one instant. */
const byPrecedence = (a: CheckedOffer, b: CheckedOffer): number =>
  Date.parse(a.exportCreated) - Date.parse(b.exportCreated) || (a.cluster < b.cluster ? -1 : a.cluster > b.cluster ? 1 : 0);

const describe = (p: OfferedServicePort) =>
  `${p.name === undefined ? 'unnamed' : `"${p.name}"`} ${p.protocol}/${p.port}${p.appProtocol !== undefined ? ` (${p.appProtocol})` : ''}`;
const samePort = (a: OfferedServicePort, b: OfferedServicePort) =>
  a.protocol === b.protocol && a.port === b.port && a.appProtocol === b.appProtocol;

/** Each port of `offer` merged into `ports` (from older exports), or the conflict that keeps it out. */
function mergePorts(ports: { port: OfferedServicePort; cluster: string }[], offer: CheckedOffer, conflicts: ExportConflict[]): void {
  for (const port of offer.ports) {
    const named = ports.find((p) => (p.port.name ?? '') === (port.name ?? ''));
    const numbered = ports.find((p) => p.port.protocol === port.protocol && p.port.port === port.port);
    const conflict = (held: { port: OfferedServicePort; cluster: string }) =>
      conflicts.push({
        reason: 'PortConflict',
        message: `cluster ${offer.cluster}'s port ${describe(port)} conflicts with cluster ${held.cluster}'s ${describe(held.port)}, which is older and kept`,
      });
    if (named) {
      if (!samePort(named.port, port)) conflict(named);
    } else if (numbered) {
      conflict(numbered);
    } else if (ports.length > 0 && (port.name === undefined || ports.some((p) => p.port.name === undefined))) {
      // A service of several ports names each of them (core/v1 validation).
      conflict(ports[0]!);
    } else {
      ports.push({ port, cluster: offer.cluster });
    }
  }
}

/** The imported service of these exports (at least one, all of one namespace and name). */
export function mergeExports(offers: readonly CheckedOffer[]): MergedService {
  const ordered = [...offers].sort(byPrecedence);
  const oldest = ordered[0];
  if (!oldest) throw new Error('mergeExports: no export');
  const conflicts: ExportConflict[] = [];
  const ports: { port: OfferedServicePort; cluster: string }[] = [];
  for (const offer of ordered) {
    if (offer.type !== oldest.type)
      conflicts.push({
        reason: 'TypeConflict',
        message: `cluster ${offer.cluster} exports a ${offer.type} service, cluster ${oldest.cluster} (older, kept) a ${oldest.type} one`,
      });
    if (offer.sessionAffinity !== oldest.sessionAffinity)
      conflicts.push({
        reason: 'SessionAffinityConflict',
        message: `cluster ${offer.cluster} sets sessionAffinity ${offer.sessionAffinity}, cluster ${oldest.cluster} (older, kept) ${oldest.sessionAffinity}`,
      });
    else if (offer.sessionAffinityTimeoutSeconds !== oldest.sessionAffinityTimeoutSeconds)
      conflicts.push({
        reason: 'SessionAffinityConfigConflict',
        message: `cluster ${offer.cluster} sets a ClientIP timeout of ${offer.sessionAffinityTimeoutSeconds ?? 'default'} s, cluster ${oldest.cluster} (older, kept) ${oldest.sessionAffinityTimeoutSeconds ?? 'default'} s`,
      });
    mergePorts(ports, offer, conflicts);
  }
  return {
    type: oldest.type,
    ports: ports.map((p) => p.port),
    sessionAffinity: oldest.sessionAffinity,
    ...(oldest.sessionAffinityTimeoutSeconds !== undefined ? { sessionAffinityTimeoutSeconds: oldest.sessionAffinityTimeoutSeconds } : {}),
    conflicts,
  };
}

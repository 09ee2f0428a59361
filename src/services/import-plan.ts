/**
 * The importer's plan (pure): from the ServiceOffers in its API server (or run directory), which
 * services it imports, with what ports, type and endpoints (in its own numbering), and what it answers
 * on each offer (conditions `Imported` and `Conflict`, which the exporter turns into its ServiceExport's).
 *
 * An offer is imported when its exporter is a peer whose networks are known here (a peering removed
 * takes its endpoints with it at once, before the exporter withdraws the offer), its namespace exists
 * here (namespace sameness: KEP-1645 never creates one), and it passes every check (offer-check.ts).
 */
import type { ConditionValue } from '../api/conditions';
import type { ServiceOfferSpec } from '../api/service-offer';
import { InputError } from '../errors';
import { type MergedService, mergeExports } from './merge-exports';
import { type CheckedOffer, type ImportedGroup, checkOffer } from './offer-check';
import type { PodTranslation } from './pod-translation';

/** Which namespaces exist here (the standalone control plane has no namespace objects: every one does). */
export interface NamespaceSet {
  has(namespace: string): boolean;
}

export interface ImportContext {
  /** Each cluster whose networks are known here (the peers once exchanged, and this cluster itself) and how its pods are seen. */
  readonly translations: ReadonlyMap<string, readonly PodTranslation[]>;
  readonly namespaces: NamespaceSet;
}

/** A service imported here: one ServiceImport, its endpoints grouped per exporter, family and ports. */
interface ImportedService extends Omit<MergedService, 'conflicts'> {
  readonly namespace: string;
  readonly name: string;
  /** The exporting clusters whose endpoints are imported, in name order. */
  readonly clusters: readonly string[];
  readonly groups: readonly ImportedGroup[];
}

/** What the importer answers on one offer. */
export interface OfferAnswer {
  readonly cluster: string;
  readonly namespace: string;
  readonly name: string;
  readonly conditions: readonly ConditionValue[];
}

export interface ImportPlan {
  /** In namespace and name order. */
  readonly imports: readonly ImportedService[];
  /** One per offer, in the offers' order. */
  readonly answers: readonly OfferAnswer[];
}

export const serviceKey = (namespace: string, name: string) => `${namespace}/${name}`;

const imported = (status: 'True' | 'False', reason: string, message: string): ConditionValue => ({
  type: 'Imported',
  status,
  reason,
  message,
});
const noConflict: ConditionValue = {
  type: 'Conflict',
  status: 'False',
  reason: 'NoConflict',
  message: 'no other export of this service disagrees',
};

/** The offer checked, or why it is not imported. */
function admit(spec: ServiceOfferSpec, context: ImportContext): CheckedOffer | ConditionValue {
  const translations = context.translations.get(spec.clusterId);
  if (!translations)
    return imported(
      'False',
      'NotPeered',
      `cluster ${spec.clusterId} is not a peer whose networks are known here: its endpoints cannot be reached`,
    );
  if (!context.namespaces.has(spec.namespace))
    return imported('False', 'NamespaceMissing', `namespace ${spec.namespace} does not exist here; the import waits for it`);
  try {
    return checkOffer(spec, translations);
  } catch (err) {
    if (!(err instanceof InputError)) throw err;
    return imported('False', 'Refused', err.message);
  }
}

export function planServiceImports(offers: readonly ServiceOfferSpec[], context: ImportContext): ImportPlan {
  const offered = new Set<string>();
  const admitted = offers.map((spec) => {
    // The adapters read one offer per exporter and service (its name says which); a second is refused, not merged.
    const key = `${spec.clusterId} ${serviceKey(spec.namespace, spec.name)}`;
    if (offered.has(key))
      return imported(
        'False',
        'Refused',
        `cluster ${spec.clusterId} offers ${serviceKey(spec.namespace, spec.name)} twice; the first offer is used`,
      );
    offered.add(key);
    return admit(spec, context);
  });
  const byService = new Map<string, CheckedOffer[]>();
  for (const offer of admitted) {
    if (!('cluster' in offer)) continue;
    const key = serviceKey(offer.namespace, offer.name);
    byService.set(key, [...(byService.get(key) ?? []), offer]);
  }
  const merged = new Map([...byService].map(([key, exports]) => [key, mergeExports(exports)]));
  const imports = [...byService.keys()].sort().map((key): ImportedService => {
    const exports = byService.get(key)!;
    const { conflicts: _conflicts, ...service } = merged.get(key)!;
    return {
      namespace: exports[0]!.namespace,
      name: exports[0]!.name,
      ...service,
      clusters: exports.map((e) => e.cluster).sort(),
      groups: exports.flatMap((e) => e.groups),
    };
  });
  const answers = offers.map((spec, i): OfferAnswer => {
    const offer = admitted[i]!;
    const where = { cluster: spec.clusterId, namespace: spec.namespace, name: spec.name };
    if (!('cluster' in offer)) return { ...where, conditions: [offer] };
    const { conflicts } = merged.get(serviceKey(spec.namespace, spec.name))!;
    const conflict: ConditionValue =
      conflicts.length === 0
        ? noConflict
        : { type: 'Conflict', status: 'True', reason: conflicts[0]!.reason, message: conflicts.map((c) => c.message).join('; ') };
    return { ...where, conditions: [imported('True', 'Imported', `imported as ${serviceKey(spec.namespace, spec.name)}`), conflict] };
  });
  return { imports, answers };
}

/**
 * One round of a cluster's multi-cluster services (pure; docs/services.md): its exports offered to every
 * established peer and to itself (an exporting cluster imports its own service too, KEP-1645), the offers
 * it holds imported, each import's ClusterSetIPs and EndpointSlices planned from the last round's, and
 * each export's conditions from the importers' answers. The control plane's adapter reads the inputs and
 * writes the outputs (the run directory: src/controller/files/services.ts).
 */
import type { ConditionValue } from '../api/conditions';
import type { ExportedServiceDocument } from '../api/exported-service-schema';
import type { ServiceImportDocument } from '../api/service-import-schema';
import { type ServiceOfferSpec, readServiceOfferSpec } from '../api/service-offer';
import { InputError } from '../errors';
import type { Cidr } from '../net/cidr';
import { allocateClusterSetIps } from './cluster-set-ips';
import { planEndpointSlices } from './endpoint-slices';
import { type ExportPlan, exportConditions, planExport } from './export-plan';
import { type OfferAnswer, type NamespaceSet, planServiceImports, serviceKey } from './import-plan';
import type { PodTranslation } from './pod-translation';

export interface ServicesInput {
  readonly us: string;
  /** Every cluster whose pods are reachable from here (this one included) and how they are seen here. */
  readonly translations: ReadonlyMap<string, readonly PodTranslation[]>;
  /** The peers whose peering is established: each is offered every valid export. */
  readonly peers: readonly string[];
  /** Our PodCIDRs (what an offer may list) and service networks (where ClusterSetIPs come from). */
  readonly podCIDRs: readonly Cidr[];
  readonly serviceCIDRs: readonly Cidr[];
  readonly exports: readonly ExportedServiceDocument[];
  /** The peers' offers to us, each already checked against its schema and its name. */
  readonly offersForUs: readonly ServiceOfferSpec[];
  /** The peers' latest answers on our offers (export-plan.ts, PeerAnswer): peer → service key → conditions. */
  readonly answersOnOurs: ReadonlyMap<string, ReadonlyMap<string, readonly ConditionValue[]>>;
  readonly previousImports: ReadonlyMap<string, ServiceImportDocument>;
  readonly namespaces: NamespaceSet;
}

export interface ServicesPlan {
  /** Our offers, by recipient (every established peer, and us), in service key order. */
  readonly offers: Map<string, ServiceOfferSpec[]>;
  /** Our answers on the offers we hold (ours to ourselves among them). */
  readonly answers: readonly OfferAnswer[];
  /** By service key. */
  readonly imports: Map<string, ServiceImportDocument>;
  /** Each export's conditions, by service key. */
  readonly exportConditions: Map<string, ConditionValue[]>;
  readonly problems: string[];
}

/**
 * The plan as it stands when its offer is one every importer's schema takes; else not valid, saying why
 * (a zone or an appProtocol too long, too many endpoints): an offer a peer cannot read would leave the
 * export Pending there forever, with no answer to say why.
 */
function offerable(us: string, plan: ExportPlan): ExportPlan {
  if (!plan.offer) return plan;
  try {
    readServiceOfferSpec({ clusterId: us, remoteClusterId: us, ...plan.offer }, 'offer');
    return plan;
  } catch (err) {
    if (!(err instanceof InputError)) throw err;
    return { valid: { type: 'Valid', status: 'False', reason: 'Unexportable', message: err.message }, leftOut: plan.leftOut };
  }
}

export function planServices(input: ServicesInput): ServicesPlan {
  const { us } = input;
  const exportPlans = new Map<string, ExportPlan>(
    input.exports.map((e) => [
      serviceKey(e.namespace, e.name),
      offerable(us, planExport({ namespace: e.namespace, name: e.name, created: e.created }, e.service, e.endpointSlices, input.podCIDRs)),
    ]),
  );
  const recipients = [...new Set([us, ...input.peers])];
  const offers = new Map<string, ServiceOfferSpec[]>(
    recipients.map((to) => [
      to,
      [...exportPlans.keys()].sort().flatMap((key) => {
        const offer = exportPlans.get(key)!.offer;
        return offer ? [{ clusterId: us, remoteClusterId: to, ...offer }] : [];
      }),
    ]),
  );
  const imported = planServiceImports([...input.offersForUs.filter((o) => o.clusterId !== us), ...offers.get(us)!], {
    translations: input.translations,
    namespaces: input.namespaces,
  });
  const keys = imported.imports.filter((i) => i.type === 'ClusterSetIP').map((i) => serviceKey(i.namespace, i.name));
  const previousIps = new Map([...input.previousImports].map(([key, doc]) => [key, doc.ips]));
  const clusterSetIps = allocateClusterSetIps(keys, previousIps, input.serviceCIDRs);
  const imports = new Map(
    imported.imports.map((service): [string, ServiceImportDocument] => {
      const key = serviceKey(service.namespace, service.name);
      const before = input.previousImports.get(key)?.endpointSlices ?? [];
      return [
        key,
        {
          namespace: service.namespace,
          name: service.name,
          type: service.type,
          ips: clusterSetIps.ips.get(key) ?? [],
          ports: [...service.ports],
          sessionAffinity: service.sessionAffinity,
          ...(service.sessionAffinityTimeoutSeconds !== undefined
            ? { sessionAffinityTimeoutSeconds: service.sessionAffinityTimeoutSeconds }
            : {}),
          clusters: [...service.clusters],
          endpointSlices: planEndpointSlices(service.name, service.groups, before).map((s) => ({
            ...s,
            ports: [...s.ports],
            endpoints: [...s.endpoints],
          })),
        },
      ];
    }),
  );
  // Our answers on our offers to ourselves are this round's.
  const selfAnswers = new Map(imported.answers.filter((a) => a.cluster === us).map((a) => [serviceKey(a.namespace, a.name), a.conditions]));
  const exportConditionsByKey = new Map(
    [...exportPlans].map(([key, plan]) => [
      key,
      exportConditions(
        plan,
        recipients.map((peer) => {
          const conditions = peer === us ? selfAnswers.get(key) : input.answersOnOurs.get(peer)?.get(key);
          return { peer, ...(conditions ? { conditions } : {}) };
        }),
      ),
    ]),
  );
  return {
    offers,
    answers: imported.answers,
    imports,
    exportConditions: exportConditionsByKey,
    problems: [
      ...clusterSetIps.exhausted.map((e) => `ClusterSetIP: ${e}`),
      ...(keys.length > 0 && input.serviceCIDRs.length === 0
        ? [`ClusterSetIP: ${keys.join(', ')} get no address: the cluster has no service network (serviceCIDR)`]
        : []),
    ],
  };
}

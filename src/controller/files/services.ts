/**
 * Multi-cluster services on the run directory (docs/services.md; the paths are src/api/run-dir.ts): the
 * imperative shell around the services round (src/services/plan-services.ts). Each round reads the
 * cluster's exported services, the peers' offers to it and their answers on its own, plans, and writes
 * what changed: its offers to each established peer (`{generation, spec}`, the generation moving with
 * the spec as an API server's does), its answers, its imports and its exports' conditions. What it wrote
 * before and no longer wants is deleted: an offer to a peer no longer established, an import no longer
 * offered. A file that cannot be used is a problem of the round and is read again at the next.
 */
import { type Condition, type ConditionValue, setConditions } from '../../api/conditions';
import { checkCompiled } from '../../api/compiled-validators';
import type { ExportedServiceDocument } from '../../api/exported-service-schema';
import { runDirPaths } from '../../api/run-dir';
import type { ServiceImportDocument } from '../../api/service-import-schema';
import { type ServiceOfferSpec, readServiceOfferSpec, readServiceOfferStatus } from '../../api/service-offer';
import { InputError } from '../../errors';
import { parseJsonText } from '../../json-text';
import type { IpamPlanes } from '../../network-ipam/planes';
import { servicesNetworks } from '../../services/cluster-networks';
import { type OfferAnswer, serviceKey } from '../../services/import-plan';
import { type ServicesPlan, planServices } from '../../services/plan-services';
import { type RunDirFiles, syncFiles } from './exchange';

const statusSuffix = '.status.json';

/**
 * `<namespace>.<name>.json` (a document) or `<namespace>.<name>.status.json` (its status): the service it
 * names, or undefined for another file. By the count of its parts, so a Service named `status` is one.
 */
function serviceOfFile(file: string, suffix = '.json'): { namespace: string; name: string } | undefined {
  if (!file.endsWith('.json')) return undefined;
  const parts = file.slice(0, -'.json'.length).split('.');
  const wanted = suffix === statusSuffix ? parts.length === 3 && parts[2] === 'status' : parts.length === 2;
  return wanted ? { namespace: parts[0]!, name: parts[1]! } : undefined;
}

/** The most services one peer may offer us, and endpoints in all its offers: what one peer can make us hold. */
const maxOffersPerPeer = 1_000;
const maxEndpointsPerPeer = 100_000;

const jsonText = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

/** A file's document, checked by `read`; a problem (and undefined) when it is missing or cannot be used. */
function readDocument<T>(files: RunDirFiles, path: string, read: (value: unknown) => T, problems: string[]): T | undefined {
  let text: string | undefined;
  try {
    text = files.read(path);
  } catch (err) {
    problems.push(`${path}: ${(err as Error).message}`);
    return undefined;
  }
  if (text === undefined) return undefined;
  const parsed = parseJsonText(text);
  if ('problem' in parsed) {
    problems.push(`${path}: not valid JSON (${parsed.problem})`);
    return undefined;
  }
  try {
    return read(parsed.value);
  } catch (err) {
    problems.push(`${path}: ${(err as Error).message}`);
    return undefined;
  }
}

/** An offer file: its generation and its spec. */
function readOfferFile(value: unknown): { generation: number; spec: ServiceOfferSpec } {
  const doc = value as { generation?: unknown; spec?: unknown } | null;
  if (typeof doc !== 'object' || doc === null) throw new InputError('', value, 'expected an object with generation and spec');
  if (!Number.isSafeInteger(doc.generation) || (doc.generation as number) < 1)
    throw new InputError('generation', doc.generation, 'expected a positive integer');
  return { generation: doc.generation as number, spec: readServiceOfferSpec(doc.spec) };
}

/** The spec's file must be the owner's, for the recipient, and named after its service. */
function requireOfferFrom(spec: ServiceOfferSpec, owner: string, recipient: string, file: string): ServiceOfferSpec {
  if (spec.clusterId !== owner) throw new InputError('spec.clusterId', spec.clusterId, `expected its directory's owner ${owner}`);
  if (spec.remoteClusterId !== recipient) throw new InputError('spec.remoteClusterId', spec.remoteClusterId, `expected ${recipient}`);
  if (file !== `${spec.namespace}.${spec.name}.json`)
    throw new InputError('spec.name', spec.name, `expected the service the file ${file} names`);
  return spec;
}

export interface ServicesRound {
  readonly plan: ServicesPlan;
  readonly written: string[];
  readonly deleted: string[];
  readonly problems: string[];
}

/** One services round of cluster `us`, its peerings those of `established`, at `now` (an ISO time, for the conditions). */
export function reconcileServices(
  files: RunDirFiles,
  us: string,
  planes: IpamPlanes,
  established: readonly string[],
  now: string,
): ServicesRound {
  const problems: string[] = [];
  const ours = new Set<string>();
  // Ours: the exports' statuses, the imports, our offers, our answers on the offers we hold.
  const exports: ExportedServiceDocument[] = [];
  const exportStatuses = new Map<string, Condition[]>();
  for (const file of files.list(runDirPaths.exportedServices(us))) {
    const path = `${runDirPaths.exportedServices(us)}/${file}`;
    const status = serviceOfFile(file, statusSuffix);
    if (status) {
      ours.add(path);
      const read = readDocument(files, path, (v) => checkCompiled('serviceOfferStatus', v), []);
      exportStatuses.set(serviceKey(status.namespace, status.name), read?.conditions ?? []);
      continue;
    }
    const named = serviceOfFile(file);
    if (!named) continue;
    const doc = readDocument(files, path, (v) => checkCompiled('exportedService', v), problems);
    if (doc && (doc.namespace !== named.namespace || doc.name !== named.name))
      problems.push(`${path}: names ${doc.namespace}/${doc.name}, not the service of its file name`);
    else if (doc) exports.push(doc);
  }
  const previousImports = new Map<string, ServiceImportDocument>();
  for (const file of files.list(runDirPaths.serviceImports(us))) {
    const named = serviceOfFile(file);
    if (!named) continue;
    const path = `${runDirPaths.serviceImports(us)}/${file}`;
    ours.add(path);
    const doc = readDocument(files, path, (v) => checkCompiled('serviceImport', v), []);
    if (doc) previousImports.set(serviceKey(named.namespace, named.name), doc);
  }
  const ourOffers = new Map<string, { generation: number; spec: ServiceOfferSpec }>();
  const answersOnOurs = new Map<string, Map<string, ConditionValue[]>>();
  for (const peer of files.list(`exchange/${us}/services`)) {
    const dir = runDirPaths.serviceOffers(us, peer);
    for (const file of files.list(dir)) {
      const named = serviceOfFile(file);
      if (!named) continue;
      const path = `${dir}/${file}`;
      ours.add(path);
      const offer = readDocument(files, path, readOfferFile, []);
      if (!offer) continue;
      const key = serviceKey(named.namespace, named.name);
      ourOffers.set(`${peer} ${key}`, offer);
      const statusPath = runDirPaths.serviceOfferStatus(us, peer, named.namespace, named.name);
      const status = readDocument(files, statusPath, readServiceOfferStatus, problems);
      const conditions = status?.conditions;
      if (conditions) answersOnOurs.set(peer, (answersOnOurs.get(peer) ?? new Map()).set(key, conditions));
    }
  }
  // Theirs: the offers the peers hold for us, with their generations (our answers name the one they answer).
  const offersForUs: ServiceOfferSpec[] = [];
  const theirGenerations = new Map<string, number>();
  const ourAnswers = new Map<string, Condition[]>();
  /** Offers that cannot be read at all: answered Refused on the service their file names, so the exporter learns why. */
  const unreadable: OfferAnswer[] = [];
  for (const owner of files.list('exchange')) {
    if (owner === us) continue;
    const dir = runDirPaths.serviceOffers(owner, us);
    let offered = 0;
    let endpoints = 0;
    for (const file of files.list(dir).sort()) {
      const status = serviceOfFile(file, statusSuffix);
      if (status) {
        const path = `${dir}/${file}`;
        ours.add(path);
        const read = readDocument(files, path, readServiceOfferStatus, []);
        ourAnswers.set(`${owner} ${serviceKey(status.namespace, status.name)}`, read?.conditions ?? []);
        continue;
      }
      const named = serviceOfFile(file);
      if (!named) continue;
      const path = `${dir}/${file}`;
      const failed: string[] = [];
      const offer = readDocument(
        files,
        path,
        (v) => {
          const read = readOfferFile(v);
          return { ...read, spec: requireOfferFrom(read.spec, owner, us, file) };
        },
        failed,
      );
      problems.push(...failed);
      const refuse = (message: string) =>
        unreadable.push({ cluster: owner, ...named, conditions: [{ type: 'Imported', status: 'False', reason: 'Refused', message }] });
      if (!offer) {
        if (failed.length > 0) refuse(failed[0]!);
        continue;
      }
      const count = offer.spec.endpointGroups.reduce((n, g) => n + g.endpoints.length, 0);
      if (++offered > maxOffersPerPeer || (endpoints += count) > maxEndpointsPerPeer) {
        refuse(
          `cluster ${owner} offers more than ${maxOffersPerPeer} services or ${maxEndpointsPerPeer} endpoints in all; this one is past the limit`,
        );
        continue;
      }
      offersForUs.push(offer.spec);
      theirGenerations.set(`${owner} ${serviceKey(offer.spec.namespace, offer.spec.name)}`, offer.generation);
    }
  }

  const networks = servicesNetworks(us, planes, established);
  const plan = planServices({
    us,
    ...networks,
    peers: established,
    exports,
    offersForUs,
    answersOnOurs,
    previousImports,
    // The standalone control plane has no namespace objects: every namespace exists.
    namespaces: { has: () => true },
  });

  const wanted = new Map<string, string>();
  for (const [to, offers] of plan.offers) {
    if (to === us) continue;
    for (const spec of offers) {
      const before = ourOffers.get(`${to} ${serviceKey(spec.namespace, spec.name)}`);
      const generation = !before ? 1 : JSON.stringify(before.spec) === JSON.stringify(spec) ? before.generation : before.generation + 1;
      wanted.set(runDirPaths.serviceOffer(us, to, spec.namespace, spec.name), jsonText({ generation, spec }));
    }
  }
  for (const answer of [...plan.answers, ...unreadable]) {
    if (answer.cluster === us) continue;
    const key = `${answer.cluster} ${serviceKey(answer.namespace, answer.name)}`;
    const conditions = setConditions(ourAnswers.get(key) ?? [], answer.conditions, now);
    wanted.set(
      runDirPaths.serviceOfferStatus(answer.cluster, us, answer.namespace, answer.name),
      jsonText({ observedGeneration: theirGenerations.get(key), conditions }),
    );
  }
  for (const [, doc] of plan.imports) wanted.set(runDirPaths.serviceImport(us, doc.namespace, doc.name), jsonText(doc));
  for (const [key, conditions] of plan.exportConditions) {
    const [namespace, name] = key.split('/') as [string, string];
    wanted.set(
      runDirPaths.exportStatus(us, namespace, name),
      jsonText({ conditions: setConditions(exportStatuses.get(key) ?? [], conditions, now) }),
    );
  }
  const { written, deleted } = syncFiles(
    files,
    wanted,
    [...ours].filter((path) => !wanted.has(path)),
  );
  return { plan, written, deleted, problems: [...problems, ...plan.problems] };
}

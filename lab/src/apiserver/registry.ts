/**
 * The API rules of each verb, kube-apiserver's generic registry and the kinds' strategies: what create,
 * update (of the object or of its status), patch and delete do to an object before the store writes it,
 * and which Status a request that breaks a rule gets (AlreadyExists, Conflict on a stale
 * resourceVersion, Invalid with causes, NotFound). A user's write, once valid, goes through admission
 * (admission-policy.ts) before it is stored. Writes run one at a time, each on the state every write
 * before it left (the store answers a write once its cache has it), as kube-apiserver's registry reads
 * and writes in one guarded etcd transaction; the work the server does on its own after a change (the
 * controllers') takes its turn among them. HTTP is the router's business; this speaks objects.
 */
import { randomInt, randomUUID } from 'node:crypto';
import type { AdmissionPolicies, AdmissionRequest } from './admission-policy';
import type { UserInfo } from './authentication';
import { type KubeObject, copy, isRecord, timestamp } from './kube-object';
import { type PatchType, jsonPatch, mergePatch, strategicDirective } from './patch';
import { appliedConfiguration, checkAppliedName, typedOrRefused } from './apply-patch';
import { syncLastApplied } from './last-applied';
import { fieldScopeOf, mergeSchemaOf, zeroObjectOf } from './field-ownership';
import { StructureError } from './structured-merge';
import {
  type ManagedFieldsEntry,
  decodeManagedFields,
  encodeManagedFields,
  managersBeforeUpdate,
  recordApply,
  recordUpdate,
} from './managed-fields';
import { crdCleanupFinalizer, crdResource } from './custom-resource-definitions';
import { type ResourceType, apiVersionOf, groupResource } from './resource-types';
import {
  ApiError,
  type Named,
  type StatusCause,
  alreadyExists,
  badRequest,
  conflict,
  invalid,
  notFound,
  staleResourceVersion,
} from './status';
import type { Store } from './store';
import type { Logger } from '../../../src/log';
import { objectMetaError, typeMetaError } from './object-meta';
import { validateNameFormat } from './validation';
import { validateObjectMetaMaps } from './object-meta-validation';
import { GarbageCollector, foregroundDeletion } from './garbage-collector';

/** How unknown fields are handled (`?fieldValidation=`): dropped, dropped with a warning (the default), or refused. */
export type FieldValidation = 'Ignore' | 'Warn' | 'Strict';

export interface WriteOptions {
  dryRun: boolean;
  fieldValidation: FieldValidation;
  /** Who asks: a user's write is admitted (admission policies); the server's own (the CRDs it starts with) is not. */
  user?: UserInfo;
  /** The manager metadata.managedFields gives the fields this write sets; the server's own writes record none. */
  fieldManager?: string;
}

export interface Written {
  object: KubeObject;
  /** 201 for a create, 200 otherwise. */
  code: number;
  /** `unknown field "spec.x"` for each pruned field, under fieldValidation=Warn (HTTP Warning headers). */
  warnings: string[];
}

/** Namespaces every cluster has, which cannot be deleted. */
const initialNamespaces = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

const namespaces = 'namespaces';

/** The characters of a generateName suffix (k8s.io/apimachinery's rand.String: no vowels, no confusables). */
const suffixAlphabet = 'bcdfghjklmnpqrstvwxz2456789';

/** A JSON text with sorted keys: two objects are the same when these are. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isRecord(value))
    return `{${Object.keys(value)
      .sort()
      .filter((k) => value[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

/** Everything but metadata and status: what a generation counts. */
function specOf(object: KubeObject): string {
  const { metadata: _m, status: _s, ...rest } = object;
  return canonical(rest);
}

const named = (type: ResourceType, name: string): Named => ({
  groupResource: groupResource(type),
  group: type.group,
  plural: type.plural,
  name,
});

export class Registry {
  /** CRDs marked for deletion whose custom resources finalizers still hold (by store key, the CRD's name). */
  private readonly terminatingDefinitions = new Set<string>();
  private readonly collector: GarbageCollector;
  /** The last write queued: the next one starts when it has ended. */
  private writing: Promise<unknown> = Promise.resolve();

  constructor(
    readonly store: Store,
    private readonly admission?: AdmissionPolicies,
    private readonly logger?: Logger,
  ) {
    this.collector = new GarbageCollector(
      store,
      (resource, object, foreground) => this.collect(resource, object, foreground),
      (work) => this.afterChange(work),
    );
    // After the change is delivered to every listener, so watchers see the resource go before its CRD.
    store.onChange((change) => {
      if (change.type === 'DELETED' && this.terminatingDefinitions.has(change.resource))
        this.afterChange(() => this.finishDefinition(change.resource));
    });
    // A server started again on its etcd goes on with the CRDs it was deleting (their cleanup finalizer says so).
    for (const crd of store.list(crdResource).filter((c) => (c.metadata.finalizers ?? []).includes(crdCleanupFinalizer))) {
      this.terminatingDefinitions.add(crd.metadata.name);
      this.afterChange(() => this.finishDefinition(crd.metadata.name));
    }
  }

  /** The namespaces every cluster has, those not stored yet (a restarted server's are). */
  async storeInitialNamespaces(): Promise<void> {
    for (const name of initialNamespaces.filter((n) => !this.store.get(namespaces, undefined, n))) {
      await this.store.put(namespaces, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name, uid: randomUUID(), creationTimestamp: timestamp(), labels: { 'kubernetes.io/metadata.name': name } },
        spec: { finalizers: ['kubernetes'] },
        status: { phase: 'Active' },
      });
    }
  }

  /**
   * Work the server does on its own once a change is made (a controller's), in its turn among the writes;
   * a failure is logged, as a controller logs it.
   */
  afterChange(work: () => Promise<void>): void {
    this.inTurn(work).catch((err: unknown) => this.logger?.error({ err }, 'the work after a change failed'));
  }

  /** Runs `write` once every write queued before it has ended. */
  private inTurn<T>(write: () => Promise<T>): Promise<T> {
    const result = this.writing.then(write);
    this.writing = result.catch(() => undefined);
    return result;
  }

  get(type: ResourceType, namespace: string | undefined, name: string): KubeObject {
    const object = this.store.get(groupResource(type), namespace, name);
    if (!object) throw notFound(named(type, name));
    return object;
  }

  create(type: ResourceType, namespace: string | undefined, body: unknown, options: WriteOptions): Promise<Written> {
    return this.inTurn(() => this.createNow(type, namespace, body, options));
  }

  /** PUT of the object (`subresource` undefined) or of its status. */
  update(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    body: unknown,
    subresource: 'status' | undefined,
    options: WriteOptions,
  ): Promise<Written> {
    return this.inTurn(() => this.updateNow(type, namespace, name, body, subresource, options));
  }

  patch(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    patchType: Exclude<PatchType, 'apply'>,
    patch: unknown,
    subresource: 'status' | undefined,
    options: WriteOptions,
  ): Promise<Written> {
    return this.inTurn(() => this.patchNow(type, namespace, name, patchType, patch, subresource, options));
  }

  delete(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    deleteOptions: unknown,
    options: Pick<WriteOptions, 'dryRun' | 'user'>,
  ): Promise<Written> {
    return this.inTurn(() => this.deleteNow(type, namespace, name, deleteOptions, options));
  }

  /**
   * A server-side apply of `body` by `options.fieldManager` (managed-fields.ts), through the object or
   * its status; a missing object is created by it (not through `/status`).
   */
  apply(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    body: Record<string, unknown>,
    force: boolean,
    subresource: 'status' | undefined,
    options: WriteOptions,
  ): Promise<Written> {
    return this.inTurn(() => this.applyNow(type, namespace, name, body, force, subresource, options));
  }

  /** A create; `applied`: the managers of an apply that creates the object (else the write is recorded as an update). */
  private async createNow(
    type: ResourceType,
    namespace: string | undefined,
    body: unknown,
    options: WriteOptions,
    applied?: ManagedFieldsEntry[],
  ): Promise<Written> {
    const object = this.decode(type, namespace, body);
    const warnings = this.pruneUnknown(type, object, options);
    object.metadata.managedFields = applied ? encodeManagedFields(applied) : this.managedFieldsAfter(type, undefined, object, '', options);
    const meta = object.metadata;
    if (!meta.name && meta.generateName)
      meta.name = `${meta.generateName}${Array.from({ length: 5 }, () => suffixAlphabet[randomInt(suffixAlphabet.length)]).join('')}`;
    const causes: StatusCause[] = [];
    if (!meta.name)
      causes.push({ reason: 'FieldValueRequired', message: 'Required value: name or generateName is required', field: 'metadata.name' });
    else causes.push(...validateNameFormat(meta.name, type.nameFormat ?? 'subdomain'));
    causes.push(...validateObjectMetaMaps(meta));
    if (namespace !== undefined && !this.store.get(namespaces, undefined, namespace))
      throw notFound({ groupResource: namespaces, group: '', plural: namespaces, name: namespace });
    for (const field of ['resourceVersion', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'selfLink']) delete meta[field];
    meta.uid = randomUUID();
    meta.creationTimestamp = timestamp();
    if (type.schema) meta.generation = 1;
    else delete meta.generation;
    if (type.schema && type.statusSubresource) delete object.status;
    type.onCreate?.(object);
    type.allocate?.(object, this.store);
    if (type.schema) causes.push(...type.schema.validate(object));
    if (type.validate) causes.push(...type.validate(object));
    if (causes.length > 0) throw invalid(type.kind, type.group, meta.name ?? '', causes);
    warnings.push(...this.admit(options, { operation: 'CREATE', type, subresource: '', namespace, object, oldObject: undefined }));
    if (this.store.get(groupResource(type), namespace, meta.name)) throw alreadyExists(named(type, meta.name));
    const stored = options.dryRun ? object : await this.store.put(groupResource(type), object);
    return { object: stored, code: 201, warnings };
  }

  /** PUT of the object (`subresource` undefined) or of its status; `applied`: the managers of an apply (else the write is recorded as an update). */
  private async updateNow(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    body: unknown,
    subresource: 'status' | undefined,
    options: WriteOptions,
    applied?: ManagedFieldsEntry[],
  ): Promise<Written> {
    const object = this.decode(type, namespace, body);
    if (object.metadata.name !== name)
      throw badRequest(`the name of the object (${object.metadata.name}) does not match the name on the URL (${name})`);
    const current = this.store.get(groupResource(type), namespace, name);
    if (!current) {
      if (type.createOnUpdate && !subresource) return this.createNow(type, namespace, object, options);
      throw notFound(named(type, name));
    }
    const warnings = this.pruneUnknown(type, object, options);
    const given = object.metadata.resourceVersion;
    if (given !== undefined && given !== '' && given !== current.metadata.resourceVersion)
      throw conflict(named(type, name), staleResourceVersion);
    if (!given && type.schema) {
      throw invalid(type.kind, type.group, name, [
        { reason: 'FieldValueInvalid', message: 'Invalid value: 0x0: must be specified for an update', field: 'metadata.resourceVersion' },
      ]);
    }
    let next: KubeObject;
    if (subresource === 'status') {
      // Only status changes (the real status strategy copies everything else from the stored object).
      next = copy(current);
      if (object.status === undefined) delete next.status;
      else next.status = object.status;
      next.metadata.managedFields = applied
        ? encodeManagedFields(applied)
        : this.managedFieldsAfter(type, current, next, 'status', options);
    } else {
      next = object;
      for (const field of ['uid', 'creationTimestamp', 'generation', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'namespace']) {
        if (current.metadata[field] === undefined) delete next.metadata[field];
        else next.metadata[field] = current.metadata[field];
      }
      if (type.statusSubresource) {
        if (current.status === undefined) delete next.status;
        else next.status = copy(current.status);
      }
      next.metadata.managedFields = applied ? encodeManagedFields(applied) : this.managedFieldsAfter(type, current, object, '', options);
      if (type.schema && specOf(next) !== specOf(current)) next.metadata.generation = (current.metadata.generation ?? 0) + 1;
      type.onUpdate?.(next, current);
      type.allocate?.(next, this.store, current);
    }
    next.metadata.resourceVersion = current.metadata.resourceVersion;
    const causes = [
      ...noNewFinalizers(next, current),
      ...validateObjectMetaMaps(next.metadata),
      ...(type.schema?.validate(next) ?? []),
      ...(type.validate?.(next) ?? []),
      ...(type.validateUpdate?.(next, current) ?? []),
    ];
    if (causes.length > 0) throw invalid(type.kind, type.group, name, causes);
    const operation = { operation: 'UPDATE', type, subresource: subresource ?? '', namespace, object: next, oldObject: current } as const;
    warnings.push(...this.admit(options, operation));
    // A write that changes nothing is no write: no new resourceVersion, no watch event.
    if (canonical(next) === canonical(current)) return { object: current, code: 200, warnings };
    if (options.dryRun) return { object: next, code: 200, warnings };
    if (next.metadata.deletionTimestamp && (next.metadata.finalizers ?? []).length === 0) {
      return { object: (await this.store.delete(groupResource(type), namespace, name))!, code: 200, warnings };
    }
    return { object: await this.store.put(groupResource(type), next), code: 200, warnings };
  }

  private patchNow(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    patchType: Exclude<PatchType, 'apply'>,
    patch: unknown,
    subresource: 'status' | undefined,
    options: WriteOptions,
  ): Promise<Written> {
    const found = patchType === 'strategic' ? strategicDirective(patch) : undefined;
    if (found) {
      const why =
        `strategic merge patch directive ${JSON.stringify(found.key)} is not supported by this API server, which applies a strategic merge patch as a JSON merge patch: ` +
        'send a JSON merge patch or a JSON patch, or replace the object (kubectl replace, kubectl apply --force)';
      throw invalid(type.kind, type.group, name, [{ reason: 'FieldValueForbidden', message: `Forbidden: ${why}`, field: found.field }]);
    }
    const current = this.get(type, namespace, name);
    const patched = patchType === 'json' ? jsonPatch(copy(current), patch) : mergePatch(copy(current), patch);
    if (!isRecord(patched) || !isRecord(patched.metadata)) throw badRequest('the patched object is not an object with metadata');
    // A resourceVersion the patch sets is a precondition; otherwise the patch applies to the current object.
    if (patched.metadata.resourceVersion === undefined) patched.metadata.resourceVersion = current.metadata.resourceVersion;
    return this.updateNow(type, namespace, name, patched, subresource, options);
  }

  private async applyNow(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    body: Record<string, unknown>,
    force: boolean,
    subresource: 'status' | undefined,
    options: WriteOptions,
  ): Promise<Written> {
    const config = appliedConfiguration(type, copy(body));
    const warnings = this.pruneUnknown(type, config, options);
    const current = this.store.get(groupResource(type), namespace, name);
    if (!current && subresource) throw notFound(named(type, name));
    const live = current ?? { apiVersion: apiVersionOf(type), kind: type.kind, metadata: { name: '' } };
    const writer = { manager: options.fieldManager ?? '', apiVersion: apiVersionOf(type), subresource: subresource ?? '' };
    const managers = decodeManagedFields(live.metadata.managedFields);
    const { object, managers: after } = typedOrRefused(config, () =>
      recordApply(
        live,
        config,
        'error' in managers ? [] : managers,
        writer,
        force,
        fieldScopeOf(type, writer.subresource),
        mergeSchemaOf(type),
        timestamp(),
      ),
    );
    checkAppliedName(object, name, namespace);
    const synced = syncLastApplied(object, config, writer.manager);
    const written = current
      ? await this.updateNow(type, namespace, name, synced, subresource, options, after)
      : await this.createNow(type, namespace, synced, options, after);
    return { ...written, warnings: [...warnings, ...written.warnings] };
  }

  private async deleteNow(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    deleteOptions: unknown,
    options: Pick<WriteOptions, 'dryRun' | 'user'>,
  ): Promise<Written> {
    const current = this.get(type, namespace, name);
    const preconditions = isRecord(deleteOptions) && isRecord(deleteOptions.preconditions) ? deleteOptions.preconditions : {};
    for (const [field, label] of [
      ['uid', 'UID'],
      ['resourceVersion', 'ResourceVersion'],
    ] as const) {
      const wanted = preconditions[field];
      if (typeof wanted === 'string' && wanted !== current.metadata[field]) {
        throw conflict(
          named(type, name),
          `Precondition failed: ${label} in precondition: ${wanted}, ${label} in object meta: ${current.metadata[field]}`,
        );
      }
    }
    if (type.kind === 'Namespace' && initialNamespaces.includes(name)) {
      throw new ApiError(403, 'Forbidden', `namespaces "${name}" is forbidden: this namespace may not be deleted`, {
        name,
        kind: namespaces,
      });
    }
    const warnings = this.admit(options, { operation: 'DELETE', type, subresource: '', namespace, object: undefined, oldObject: current });
    if (options.dryRun) return { object: current, code: 200, warnings };
    const grace = type.kind === 'Pod' && type.group === '' ? podGracePeriod(current, deleteOptions) : 0;
    if (grace > 0) return { object: await this.endGracefully(groupResource(type), current, grace), code: 200, warnings };
    if (groupResource(type) === crdResource) return { object: await this.deleteDefinition(current), code: 200, warnings };
    if (isRecord(deleteOptions) && (deleteOptions.propagationPolicy === 'Orphan' || deleteOptions.orphanDependents === true))
      await this.collector.orphan(current);
    if (type.kind === 'Namespace' && (current.metadata.finalizers ?? []).length === 0) await this.deleteNamespaceContents(name);
    const foreground = isRecord(deleteOptions) && deleteOptions.propagationPolicy === 'Foreground';
    return { object: await this.deleteOrMark(groupResource(type), current, withForeground(current, foreground)), code: 200, warnings };
  }

  /** metadata.managedFields after `options.fieldManager` writes `after` over `before` (undefined: a create), or before's for the server's own writes. */
  private managedFieldsAfter(
    type: ResourceType,
    before: KubeObject | undefined,
    after: KubeObject,
    subresource: string,
    options: WriteOptions,
  ): Record<string, unknown>[] | undefined {
    if (options.fieldManager === undefined) return before?.metadata.managedFields as Record<string, unknown>[] | undefined;
    const managers = managersBeforeUpdate(before, after.metadata.managedFields, subresource);
    const writer = { manager: options.fieldManager, apiVersion: apiVersionOf(type), subresource };
    const scope = fieldScopeOf(type, subresource);
    try {
      return encodeManagedFields(
        recordUpdate(before ?? zeroObjectOf(type), after, managers, writer, scope, mergeSchemaOf(type), timestamp()),
      );
    } catch (error) {
      // UpdateNoErrors: an object its schema cannot type (a list-map item without its key) keeps the managers it had.
      if (error instanceof StructureError) return before?.metadata.managedFields as Record<string, unknown>[] | undefined;
      throw error;
    }
  }

  /** The warnings of the admission policies a user's write passes (it throws the denial of one it does not). */
  private admit(options: Pick<WriteOptions, 'dryRun' | 'user'>, request: Omit<AdmissionRequest, 'user' | 'dryRun'>): string[] {
    if (!options.user || !this.admission) return [];
    return this.admission.admit({ ...request, user: options.user, dryRun: options.dryRun });
  }

  /** A Pod on a node ends gracefully: marked Terminating until its kubelet confirms with a grace period of 0. */
  private async endGracefully(resource: string, current: KubeObject, grace: number): Promise<KubeObject> {
    const ends = Date.now() + grace * 1000;
    const markedEnd = current.metadata.deletionTimestamp ? Date.parse(current.metadata.deletionTimestamp) : Infinity;
    if (ends >= markedEnd) return current;
    const marked = copy(current);
    marked.metadata.deletionTimestamp = timestamp(new Date(ends));
    marked.metadata.deletionGracePeriodSeconds = grace;
    return this.store.put(resource, marked);
  }

  /** A dependent the garbage collector deletes: as a DELETE would (a Pod gracefully), in the foreground when told. */
  private async collect(resource: string, object: KubeObject, foreground: boolean): Promise<void> {
    const grace = resource === 'pods' ? podGracePeriod(object, undefined) : 0;
    if (grace > 0) await this.endGracefully(resource, object, grace);
    else await this.deleteOrMark(resource, object, withForeground(object, foreground));
  }

  /**
   * Deletes an object, or, while finalizers hold it, marks it (deletionTimestamp): their controllers
   * remove it by the update that clears them.
   */
  private async deleteOrMark(resource: string, current: KubeObject, finalizers = current.metadata.finalizers ?? []): Promise<KubeObject> {
    if (finalizers.length === 0) return (await this.store.delete(resource, current.metadata.namespace, current.metadata.name))!;
    if (current.metadata.deletionTimestamp) return current;
    const marked = copy(current);
    marked.metadata.deletionTimestamp = timestamp();
    marked.metadata.deletionGracePeriodSeconds = 0;
    marked.metadata.finalizers = finalizers;
    // rest.BeforeDelete: the start of a deletion is a new generation for what counts them.
    if ((marked.metadata.generation ?? 0) > 0) marked.metadata.generation = marked.metadata.generation! + 1;
    return this.store.put(resource, marked);
  }

  /**
   * A CRD goes after its custom resources (the real server's CRD finalizer deletes them first): those
   * their own finalizers hold keep it Terminating, and it goes when the last of them does.
   */
  private async deleteDefinition(crd: KubeObject): Promise<KubeObject> {
    const resource = crd.metadata.name;
    for (const object of this.store.list(resource)) await this.deleteOrMark(resource, object);
    if (this.store.list(resource).length === 0) return this.deleteOrMark(crdResource, crd);
    this.terminatingDefinitions.add(resource);
    return this.deleteOrMark(crdResource, crd, [...new Set([...(crd.metadata.finalizers ?? []), crdCleanupFinalizer])]);
  }

  /** The last custom resource of a Terminating CRD is gone: the CRD's finalizer is done. */
  private async finishDefinition(resource: string): Promise<void> {
    if (!this.terminatingDefinitions.has(resource) || this.store.list(resource).length > 0) return;
    this.terminatingDefinitions.delete(resource);
    const crd = this.store.get(crdResource, undefined, resource);
    if (!crd) return;
    const finalizers = (crd.metadata.finalizers ?? []).filter((f) => f !== crdCleanupFinalizer);
    if (finalizers.length === 0) await this.store.delete(crdResource, undefined, resource);
    else await this.store.put(crdResource, { ...crd, metadata: { ...crd.metadata, finalizers } });
  }

  /** A namespace's objects go with it (the namespace controller's work, done at once). */
  private async deleteNamespaceContents(namespace: string): Promise<void> {
    for (const resource of this.store.resources()) {
      for (const object of this.store.list(resource, namespace)) await this.store.delete(resource, namespace, object.metadata.name);
    }
  }

  /** The request body as an object of `type` in `namespace` (a mutable copy), or 400. */
  private decode(type: ResourceType, namespace: string | undefined, body: unknown): KubeObject {
    if (!isRecord(body)) throw badRequest(`the body of the request is not a ${type.kind} object`);
    const object = copy(body) as KubeObject;
    const apiVersion = apiVersionOf(type);
    const typeError = typeMetaError(object);
    if (typeError) throw badRequest(`the object provided is unrecognized (must be of type ${type.kind}): ${typeError}`);
    if ((object.apiVersion !== undefined && object.apiVersion !== apiVersion) || (object.kind !== undefined && object.kind !== type.kind)) {
      throw badRequest(
        `the API version in the data (${String(object.apiVersion)}) does not match the expected API version (${apiVersion})`,
      );
    }
    const metaError = objectMetaError(type.kind, object.metadata);
    if (metaError)
      throw badRequest(`${type.kind} in version ${JSON.stringify(type.version)} cannot be handled as a ${type.kind}: ${metaError}`);
    object.apiVersion = apiVersion;
    object.kind = type.kind;
    // Before the defaults, which read it (a Namespace's name label): a body without metadata decodes to an empty one.
    if (!isRecord(object.metadata)) object.metadata = { name: '' };
    type.defaults?.(object);
    const given = object.metadata.namespace;
    if (type.namespaced) {
      if (given !== undefined && given !== '' && given !== namespace)
        throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
      object.metadata.namespace = namespace;
    } else {
      delete object.metadata.namespace;
    }
    return object;
  }

  /** Drops the fields a custom resource's schema does not know; refuses them under Strict, as the real decoder does. */
  private pruneUnknown(type: ResourceType, object: KubeObject, options: WriteOptions): string[] {
    if (!type.schema) return [];
    const unknown = type.schema.prune(object).map((path) => `unknown field ${JSON.stringify(path)}`);
    if (unknown.length > 0 && options.fieldValidation === 'Strict') {
      throw badRequest(
        `${type.kind} in version "${type.version}" cannot be handled as a ${type.kind}: strict decoding error: ${unknown.join(', ')}`,
      );
    }
    return options.fieldValidation === 'Warn' ? unknown : [];
  }
}

/**
 * ValidateObjectMetaUpdate (apimachinery pkg/api/validation/objectmeta.go): an object being deleted takes
 * no new finalizer, `no new finalizers can be added if the object is being deleted`.
 */
function noNewFinalizers(next: KubeObject, current: KubeObject): StatusCause[] {
  if (!current.metadata.deletionTimestamp) return [];
  const extra = (next.metadata.finalizers ?? []).filter((f) => !(current.metadata.finalizers ?? []).includes(f));
  if (extra.length === 0) return [];
  const goSlice = `[]string{${[...new Set(extra)]
    .sort()
    .map((f) => JSON.stringify(f))
    .join(', ')}}`;
  return [
    {
      reason: 'FieldValueForbidden',
      message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ${goSlice}`,
      field: 'metadata.finalizers',
    },
  ];
}

/**
 * The grace period of a Pod's DELETE: bound to a node and not finished, the request's gracePeriodSeconds,
 * else its spec.terminationGracePeriodSeconds, else 30 (as kube-apiserver's pod strategy); else 0
 * (deleted at once, or held by finalizers).
 */
function podGracePeriod(pod: KubeObject, deleteOptions: unknown): number {
  const spec = isRecord(pod.spec) ? pod.spec : {};
  const phase = isRecord(pod.status) ? pod.status.phase : undefined;
  if (typeof spec.nodeName !== 'string' || spec.nodeName === '' || phase === 'Succeeded' || phase === 'Failed') return 0;
  const asked = isRecord(deleteOptions) ? deleteOptions.gracePeriodSeconds : undefined;
  if (typeof asked === 'number') return Math.max(0, asked);
  return typeof spec.terminationGracePeriodSeconds === 'number' ? spec.terminationGracePeriodSeconds : 30;
}

/** The finalizers a deletion leaves on the object: its own, and in the foreground `foregroundDeletion` (the collector's to remove). */
function withForeground(object: KubeObject, foreground: boolean): string[] {
  const finalizers = object.metadata.finalizers ?? [];
  return foreground && !finalizers.includes(foregroundDeletion) ? [...finalizers, foregroundDeletion] : finalizers;
}

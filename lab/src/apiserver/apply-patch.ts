/**
 * A server-side apply's body (PATCH `application/apply-patch+yaml`: YAML, or JSON, which is YAML; kubectl
 * and client-node send JSON) read as kube-apiserver reads it (handlers/patch.go applyPatcher,
 * sigs.k8s.io/yaml: YAML 1.1 into a map), and the applied configuration checked as its field manager
 * and patcher check it: the same group, version and kind as the endpoint (versioncheck.go, 400
 * `invalid object type: apps/v1, Kind=Deployment`), no managedFields (structuredmerge.go, 400
 * `metadata.managedFields must be nil`), and, once merged, the name and namespace of the URL
 * (rest.go checkName). One its schema cannot type fails as there: a plain error, a 500 without a reason.
 */
import { parse } from 'yaml';
import { jsonKind } from './go-json';
import { type KubeObject, isRecord } from './kube-object';
import { type ResourceType, apiVersionOf } from './resource-types';
import { ApiError, badRequest } from './status';
import { StructureError } from './structured-merge';

/** The applied configuration in an apply's body, or the 400 of one that is not a YAML or JSON map. */
export function decodeApplyPatch(body: Buffer): Record<string, unknown> {
  let value: unknown;
  try {
    value = parse(body.toString('utf8'), { version: '1.1' }) as unknown;
  } catch (error) {
    throw badRequest(`error decoding YAML: error converting YAML to JSON: yaml: ${(error as Error).message.split('\n')[0]}`);
  }
  if (value === null || value === undefined) return {};
  if (!isRecord(value))
    throw badRequest(
      `error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal ${jsonKind(value)} into Go value of type map[string]interface {}`,
    );
  return value;
}

/** schema.GroupVersionKind.String(): `apps/v1, Kind=Deployment`, `/v1, Kind=ConfigMap`. */
function groupVersionKind(apiVersion: unknown, kind: unknown): string {
  const text = typeof apiVersion === 'string' ? apiVersion : '';
  const [group, version] = text.includes('/') ? text.split('/', 2) : ['', text];
  return `${group}/${version}, Kind=${typeof kind === 'string' ? kind : ''}`;
}

/** The configuration as an object of `type`, or the 400 of one for another kind or carrying managedFields. */
export function appliedConfiguration(type: ResourceType, config: Record<string, unknown>): KubeObject {
  if (config.apiVersion !== apiVersionOf(type) || config.kind !== type.kind)
    throw badRequest(`invalid object type: ${groupVersionKind(config.apiVersion, config.kind)}`);
  const metadata = isRecord(config.metadata) ? config.metadata : {};
  if (metadata.managedFields !== undefined && metadata.managedFields !== null) throw badRequest('metadata.managedFields must be nil');
  return { ...config, metadata } as KubeObject;
}

/** checkName: the merged object names the URL's object (and, when it names one, its namespace). */
export function checkAppliedName(object: KubeObject, name: string, namespace: string | undefined): void {
  const given = typeof object.metadata.name === 'string' ? object.metadata.name : '';
  if (given !== name) throw badRequest(`the name of the object (${given}) does not match the name on the URL (${name})`);
  const givenNamespace = object.metadata.namespace;
  if (namespace && typeof givenNamespace === 'string' && givenNamespace !== '' && givenNamespace !== namespace)
    throw badRequest(`the namespace of the object (${givenNamespace}) does not match the namespace on the URL (${namespace})`);
}

/**
 * `apply()`, or, for a configuration (or live object) its schema cannot type (structuredmerge.go: a
 * list-map item without its key, two items with one key), kube-apiserver's plain error: a 500 without a
 * reason, `failed to create typed patch object (default/x; apps/v1, Kind=Deployment): ...`.
 */
export function typedOrRefused<T>(config: KubeObject, apply: () => T): T {
  try {
    return apply();
  } catch (error) {
    if (!(error instanceof StructureError)) throw error;
    const { namespace = '', name = '' } = config.metadata;
    throw new ApiError(
      500,
      '',
      `failed to create typed patch object (${namespace}/${name}; ${groupVersionKind(config.apiVersion, config.kind)}): ${error.message}`,
    );
  }
}

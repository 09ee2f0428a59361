/**
 * What kube-apiserver's apiextensions registry does with a CustomResourceDefinition, as far as a chart's
 * CRDs and their upgrades need it (k8s.io/apiextensions-apiserver, release-1.31): validation of the
 * definition (pkg/apis/apiextensions/validation/validation.go), the status the establishing controllers
 * write (NamesAccepted, Established, acceptedNames, storedVersions), and deletion, which takes the
 * custom resources with it (pkg/controller/finalizer/crd_finalizer.go) before the definition goes.
 */
import { type KubeObject, isRecord, timestamp } from './kube-object';
import type { StatusCause } from './status';
import { invalidValue } from './validation';

/** The store's key of CRDs; a CRD's name (`<plural>.<group>`) is the store's key of its resources. */
export const crdResource = 'customresourcedefinitions.apiextensions.k8s.io';

/** The finalizer the real server puts on a CRD whose custom resources are being deleted. */
export const crdCleanupFinalizer = 'customresourcecleanup.apiextensions.k8s.io';

const required = (field: string, detail = ''): StatusCause => ({
  reason: 'FieldValueRequired',
  message: detail ? `Required value: ${detail}` : 'Required value',
  field,
});

const text = (record: Record<string, unknown>, key: string) => (typeof record[key] === 'string' ? (record[key] as string) : '');

/** ValidateCustomResourceDefinition, the rules a CRD file can break. */
export function validateCustomResourceDefinition(crd: KubeObject): StatusCause[] {
  const spec = isRecord(crd.spec) ? crd.spec : {};
  const names = isRecord(spec.names) ? spec.names : {};
  const group = text(spec, 'group');
  const plural = text(names, 'plural');
  const causes: StatusCause[] = [];
  if (crd.metadata.name !== `${plural}.${group}`)
    causes.push(invalidValue('metadata.name', crd.metadata.name, 'must be spec.names.plural+"."+spec.group'));
  if (group === '') causes.push(required('spec.group'));
  else if (!group.includes('.')) causes.push(invalidValue('spec.group', group, 'should be a domain with at least one dot'));
  const scope = text(spec, 'scope');
  if (scope !== 'Cluster' && scope !== 'Namespaced') {
    causes.push({
      reason: 'FieldValueNotSupported',
      message: `Unsupported value: ${JSON.stringify(scope)}: supported values: "Cluster", "Namespaced"`,
      field: 'spec.scope',
    });
  }
  for (const key of ['plural', 'kind', 'listKind']) if (text(names, key) === '') causes.push(required(`spec.names.${key}`));
  const versions = Array.isArray(spec.versions) ? spec.versions.filter(isRecord) : [];
  if (versions.length === 0) causes.push(required('spec.versions', 'must have exactly one version marked as storage version'));
  else if (versions.filter((v) => v.storage === true).length !== 1)
    causes.push(invalidValue('spec.versions', versions, 'must have exactly one version marked as storage version'));
  versions.forEach((version, i) => {
    if (text(version, 'name') === '') causes.push(required(`spec.versions[${i}].name`));
    const schema = isRecord(version.schema) ? version.schema.openAPIV3Schema : undefined;
    if (!isRecord(schema)) causes.push(required(`spec.versions[${i}].schema.openAPIV3Schema`, 'schemas are required'));
    else if (schema.type !== 'object')
      causes.push(invalidValue(`spec.versions[${i}].schema.openAPIV3Schema.type`, schema.type ?? '', 'must be object at the root'));
  });
  return causes;
}

/** On update: the group, scope and kind cannot change (ValidateCustomResourceDefinitionUpdate, as 1.31 keeps them). */
export function validateCustomResourceDefinitionUpdate(next: KubeObject, current: KubeObject): StatusCause[] {
  const spec = (o: KubeObject) => (isRecord(o.spec) ? o.spec : {});
  return (['group', 'scope'] as const)
    .filter((key) => spec(next)[key] !== spec(current)[key])
    .map((key) => invalidValue(`spec.${key}`, spec(next)[key], 'field is immutable'));
}

const storageVersion = (crd: KubeObject): string => {
  const versions = isRecord(crd.spec) && Array.isArray(crd.spec.versions) ? crd.spec.versions.filter(isRecord) : [];
  return text(versions.find((v) => v.storage === true) ?? {}, 'name');
};

/**
 * The status the real server's controllers write once a CRD is stored and its names are free:
 * NamesAccepted and Established (what `helm install` and `kubectl wait --for condition=established`
 * wait for), the accepted names, and the storage versions ever used (kept across updates).
 */
export function establishedStatus(crd: KubeObject, previous?: KubeObject): Record<string, unknown> {
  const now = timestamp();
  const stored =
    isRecord(previous?.status) && Array.isArray(previous.status.storedVersions) ? (previous.status.storedVersions as string[]) : [];
  const condition = (type: string, reason: string, message: string) => ({ type, status: 'True', lastTransitionTime: now, reason, message });
  const keptConditions = isRecord(previous?.status) && Array.isArray(previous.status.conditions) ? previous.status.conditions : undefined;
  return {
    conditions: keptConditions ?? [
      condition('NamesAccepted', 'NoConflicts', 'no conflicts found'),
      condition('Established', 'InitialNamesAccepted', 'the initial names have been accepted'),
    ],
    acceptedNames: isRecord(crd.spec) ? crd.spec.names : {},
    storedVersions: [...new Set([...stored, storageVersion(crd)])],
  };
}

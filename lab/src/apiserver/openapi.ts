/**
 * The OpenAPI v3 documents kubectl reads before `apply`: with `--validate=strict` (its default) it
 * checks that the PATCH of the kind takes the `fieldValidation` parameter, then lets the server validate
 * (sending fieldValidation=Strict); without these documents it refuses to apply. A PATCH's request
 * body media types tell it the patch to send: JSON merge patch here (strategic merge patch is absent,
 * so for built-in kinds kubectl falls back to its compiled-in types and sends one, which the server
 * takes as a merge patch, refusing its directives: patch.ts). Custom resources carry their CRD schema,
 * as on a real server.
 */
import type { ResourceType } from './resource-types';

/** `/openapi/v3`: where each group version's document is. */
export function openApiRoot(types: ResourceType[]) {
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const type of types) {
    const path = type.group ? `apis/${type.group}/${type.version}` : `api/${type.version}`;
    paths[path] = { serverRelativeURL: `/openapi/v3/${path}` };
  }
  return { paths };
}

/** `io.strait.v1alpha1.NodeDataplane`, `io.k8s.api.core.v1.Node`: a kind's schema name. */
function schemaName(type: ResourceType): string {
  const group = type.group ? type.group.split('.').reverse().join('.') : 'io.k8s.api.core';
  return `${group}.${type.version}.${type.kind}`;
}

/** `/openapi/v3/apis/<group>/<version>`, undefined for a group version not served. */
export function openApiDocument(types: ResourceType[], groupVersionPath: string) {
  const served = types.filter((t) => (t.group ? `apis/${t.group}/${t.version}` : `api/${t.version}`) === groupVersionPath);
  if (served.length === 0) return undefined;
  const paths: Record<string, unknown> = {};
  const schemas: Record<string, unknown> = {};
  for (const type of served) {
    const gvk = { group: type.group, version: type.version, kind: type.kind };
    const ref = { $ref: `#/components/schemas/${schemaName(type)}` };
    const base = `/${groupVersionPath}${type.namespaced ? '/namespaces/{namespace}' : ''}/${type.plural}/{name}`;
    const query = (name: string) => ({ name, in: 'query', schema: { type: 'string', uniqueItems: true } });
    const patch = {
      'x-kubernetes-action': 'patch',
      'x-kubernetes-group-version-kind': gvk,
      parameters: [query('dryRun'), query('fieldManager'), query('fieldValidation'), query('force')],
      requestBody: {
        content: {
          'application/merge-patch+json': { schema: { type: 'object' } },
          'application/json-patch+json': { schema: { type: 'object' } },
          'application/apply-patch+yaml': { schema: { type: 'object' } },
        },
      },
      responses: { '200': { description: 'OK', content: { 'application/json': { schema: ref } } } },
    };
    // A review is only created: nothing to patch.
    if (!type.createOnly) paths[base] = { patch };
    if (type.statusSubresource) paths[`${base}/status`] = { patch };
    schemas[schemaName(type)] = {
      ...(type.openAPIV3Schema ?? { type: 'object' }),
      'x-kubernetes-group-version-kind': [gvk],
    };
  }
  return { openapi: '3.0.0', info: { title: 'Kubernetes', version: 'v1.31.0' }, paths, components: { schemas } };
}

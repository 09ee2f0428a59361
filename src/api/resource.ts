/**
 * A strait.io resource: one definition (its names, its spec and status schemas and the columns of
 * `kubectl get`) from which come its TypeScript types, its validators (compiled at build time:
 * write-validators.ts) and its CustomResourceDefinition (crd.ts). The object envelope is Kubernetes':
 * apiVersion, kind, metadata, spec, status. Only the build loads the definitions; the processes name
 * objects with resource-names.ts.
 */
import { type TSchema, Type } from '@sinclair/typebox';
import { type ResourceNames, apiVersion } from './resource-names';

/** A column of `kubectl get` (additionalPrinterColumns). */
export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description?: string;
  /** 1: only with `-o wide`. */
  priority?: number;
}

export interface ResourceDefinition<Spec extends TSchema, Status extends TSchema | undefined> extends ResourceNames {
  shortNames: string[];
  description: string;
  /** Cluster-scoped unless said (a pool IPAM StraitEndpoint lives in its pod's namespace). */
  scope?: 'Cluster' | 'Namespaced';
  spec: Spec;
  status: Status;
  columns: PrinterColumn[];
}

/** The metadata Strait reads and writes; the API server adds more, which is kept as it is. */
export const ObjectMeta = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 253 }),
    resourceVersion: Type.Optional(Type.String()),
    labels: Type.Optional(Type.Record(Type.String(), Type.String())),
    annotations: Type.Optional(Type.Record(Type.String(), Type.String())),
  },
  { additionalProperties: true },
);

/** The schema of a whole object of the resource, as read from a file or the API server. */
export function objectSchema<Spec extends TSchema, Status extends TSchema>(definition: ResourceDefinition<Spec, Status>) {
  return Type.Object(
    {
      apiVersion: Type.Literal(apiVersion),
      kind: Type.Literal(definition.kind),
      metadata: ObjectMeta,
      spec: definition.spec,
      status: Type.Optional(definition.status),
    },
    { additionalProperties: false },
  );
}

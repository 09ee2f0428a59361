/**
 * A strait.io resource: one definition (its spec and status schemas, its names and the columns of
 * `kubectl get`) from which come its TypeScript types, its validator and its CustomResourceDefinition
 * (crd.ts). The object envelope is Kubernetes': apiVersion, kind, metadata, spec, status.
 */
import { type Static, type TObject, type TSchema, Type } from '@sinclair/typebox';

export const group = 'strait.io';
export const version = 'v1alpha1';
export const apiVersion = `${group}/${version}` as const;

/** A column of `kubectl get` (additionalPrinterColumns). */
export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description?: string;
  /** 1: only with `-o wide`. */
  priority?: number;
}

export interface ResourceDefinition<Spec extends TSchema, Status extends TSchema | undefined> {
  kind: string;
  plural: string;
  shortNames: string[];
  description: string;
  /** Cluster-scoped unless said (a pool IPAM Endpoint lives in its pod's namespace). */
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
export function objectSchema<Spec extends TSchema, Status extends TSchema | undefined>(definition: ResourceDefinition<Spec, Status>) {
  return Type.Object(
    {
      apiVersion: Type.Literal(apiVersion),
      kind: Type.Literal(definition.kind),
      metadata: ObjectMeta,
      spec: definition.spec,
      ...(definition.status ? { status: Type.Optional(definition.status as TSchema) } : {}),
    },
    { additionalProperties: false },
  ) as TObject;
}

export type ObjectOf<Spec extends TSchema, Status extends TSchema | undefined = undefined> = {
  apiVersion: typeof apiVersion;
  kind: string;
  metadata: Static<typeof ObjectMeta>;
  spec: Static<Spec>;
} & (Status extends TSchema ? { status?: Static<Status> } : object);

/** An object of the resource named `name` with `spec` (and `status`). */
export function makeObject<Spec extends TSchema, Status extends TSchema | undefined>(
  definition: ResourceDefinition<Spec, Status>,
  name: string,
  spec: Static<Spec>,
  status?: Status extends TSchema ? Static<Status> : never,
): ObjectOf<Spec, Status> {
  return { apiVersion, kind: definition.kind, metadata: { name }, spec, ...(status === undefined ? {} : { status }) } as ObjectOf<Spec, Status>;
}

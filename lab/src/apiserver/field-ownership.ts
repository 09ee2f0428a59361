/**
 * What managedFields need to know of a kind: how its objects merge (its merge schema), which fields a
 * write through each endpoint may own (the strategies' reset fields: a kind with a status subresource
 * owns no status through the object, and nothing but status through `/status`), and the object a
 * create starts from (Go's zero value of the kind, which has a spec and a status for a built-in, and
 * nothing but its type for a custom resource).
 */
import { fieldSetOf, recursiveDifference, within } from './field-set';
import type { KubeObject } from './kube-object';
import type { FieldScope } from './managed-fields';
import { type MergeSchema, builtInMergeSchema, customResourceMergeSchema } from './merge-schema';
import { type ResourceType, apiVersionOf } from './resource-types';

export const mergeSchemaOf = (type: ResourceType): MergeSchema =>
  type.openAPIV3Schema ? customResourceMergeSchema(type.openAPIV3Schema) : builtInMergeSchema(type.kind);

const status = fieldSetOf([['f:status']]);

export function fieldScopeOf(type: ResourceType, subresource: string): FieldScope {
  if (subresource === 'status') return (set) => within(set, 'f:status');
  return type.statusSubresource ? (set) => recursiveDifference(set, status) : (set) => set;
}

export const zeroObjectOf = (type: ResourceType): KubeObject => ({
  apiVersion: apiVersionOf(type),
  kind: type.kind,
  metadata: { name: '' },
  ...(type.openAPIV3Schema ? {} : { spec: {}, status: {} }),
});

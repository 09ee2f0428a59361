/** A strait.io object as Strait writes it: Kubernetes' envelope (apiVersion, kind, metadata) around a spec. */
import type { Static } from '@sinclair/typebox';
import type { ObjectMeta } from './resource';
import { type ResourceNames, apiVersion } from './resource-names';

export interface StraitObject<Spec> {
  apiVersion: typeof apiVersion;
  kind: string;
  metadata: Static<typeof ObjectMeta>;
  spec: Spec;
}

/** The object of the resource named `name` with `spec`. */
export const makeObject = <Spec>(resource: ResourceNames, name: string, spec: Spec): StraitObject<Spec> => ({
  apiVersion,
  kind: resource.kind,
  metadata: { name },
  spec,
});

/**
 * kubectl's client-side apply annotation kept in step by its server-side apply
 * (internal/lastappliedupdater.go): when the manager `kubectl` applies to an object that has
 * `kubectl.kubernetes.io/last-applied-configuration`, the annotation becomes the configuration applied
 * (without the annotation itself), so a later client-side apply diffs against what was last applied.
 * Any other manager leaves it alone.
 */
import { type KubeObject, isRecord } from './kube-object';

const lastAppliedAnnotation = 'kubectl.kubernetes.io/last-applied-configuration';

/** Go's json.Encoder of a map: keys sorted, `<`, `>` and `&` escaped, a newline after. */
function goJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(goJson).join(',')}]`;
  if (isRecord(value))
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${goJson(value[k])}`)
      .join(',')}}`;
  return JSON.stringify(value).replace(/[<>&]/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`);
}

/** `object` with its last-applied annotation set to `config`, when `manager` is kubectl and it has one. */
export function syncLastApplied(object: KubeObject, config: KubeObject, manager: string): KubeObject {
  const annotations = object.metadata.annotations;
  if (manager !== 'kubectl' || annotations?.[lastAppliedAnnotation] === undefined) return object;
  const { [lastAppliedAnnotation]: _own, ...configAnnotations } = config.metadata.annotations ?? {};
  const { annotations: _a, ...configMetadata } = config.metadata;
  const applied = {
    ...config,
    metadata: { ...configMetadata, ...(Object.keys(configAnnotations).length > 0 ? { annotations: configAnnotations } : {}) },
  };
  return { ...object, metadata: { ...object.metadata, annotations: { ...annotations, [lastAppliedAnnotation]: `${goJson(applied)}\n` } } };
}

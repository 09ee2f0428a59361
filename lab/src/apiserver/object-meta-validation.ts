/**
 * kube-apiserver's validation of every object's labels and annotations, whatever its kind
 * (k8s.io/apimachinery, release-1.31: pkg/api/validation/objectmeta.go ValidateObjectMeta,
 * pkg/apis/meta/v1/validation ValidateLabels, util/validation IsQualifiedName and IsValidLabelValue),
 * with the real messages: a key is a qualified name (an optional DNS subdomain prefix and `/`, then a
 * name of at most 63 alphanumerics, `-`, `_` or `.`), a label value at most 63 of the same or empty,
 * and all annotations together at most 256 KiB.
 */
import { isRecord } from './kube-object';
import type { StatusCause } from './status';
import { invalidValue } from './validation';

const qualifiedNamePattern = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const subdomainPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const labelValuePattern = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const maxAnnotationsBytes = 256 * 1024;

const nameFormat =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const prefixFormat =
  "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const valueFormat =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/** IsQualifiedName: why `key` is not one (each reason the real function gives). */
export function qualifiedNameProblems(key: string): string[] {
  const parts = key.split('/');
  if (parts.length > 2)
    return [
      `a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  const [prefix, name] = parts.length === 2 ? [parts[0]!, parts[1]!] : [undefined, parts[0]!];
  const problems: string[] = [];
  if (prefix !== undefined) {
    if (prefix === '') problems.push('prefix part must be non-empty');
    else if (prefix.length > 253) problems.push('prefix part must be no more than 253 characters');
    else if (!subdomainPattern.test(prefix)) problems.push(prefixFormat);
  }
  if (name === '') problems.push('name part must be non-empty');
  else if (name.length > 63) problems.push('name part must be no more than 63 characters');
  if (name !== '' && !qualifiedNamePattern.test(name)) problems.push(nameFormat);
  return problems;
}

/** ValidateLabels: the causes of a label map at `field` (an object's labels, a Service's selector). */
export function validateLabels(labels: Record<string, string>, field: string): StatusCause[] {
  const causes: StatusCause[] = [];
  for (const [key, value] of Object.entries(labels)) {
    for (const problem of qualifiedNameProblems(key)) causes.push(invalidValue(field, key, problem));
    if (value.length > 63) causes.push(invalidValue(field, value, 'must be no more than 63 characters'));
    if (!labelValuePattern.test(value)) causes.push(invalidValue(field, value, valueFormat));
  }
  return causes;
}

/** The causes of an object's labels and annotations. */
export function validateObjectMetaMaps(metadata: Record<string, unknown>): StatusCause[] {
  const causes = validateLabels(isRecord(metadata.labels) ? (metadata.labels as Record<string, string>) : {}, 'metadata.labels');
  const annotations = isRecord(metadata.annotations) ? (metadata.annotations as Record<string, string>) : {};
  let bytes = 0;
  for (const [key, value] of Object.entries(annotations)) {
    for (const problem of qualifiedNameProblems(key.toLowerCase())) causes.push(invalidValue('metadata.annotations', key, problem));
    bytes += Buffer.byteLength(key) + Buffer.byteLength(value);
  }
  if (bytes > maxAnnotationsBytes)
    causes.push({
      reason: 'FieldValueTooLong',
      message: `Too long: must have at most ${maxAnnotationsBytes} bytes`,
      field: 'metadata.annotations',
    });
  return causes;
}

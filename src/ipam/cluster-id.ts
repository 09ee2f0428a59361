import { InputError } from '../errors';

/** DNS-1123 label: what a Kubernetes object name built from it (and a UUID) can carry. */
const clusterIdPattern = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function parseClusterId(field: string, text: unknown): string {
  if (typeof text !== 'string' || !clusterIdPattern.test(text)) {
    throw new InputError(field, text, 'a cluster id is 1 to 63 lowercase letters, digits or "-", starting and ending with a letter or digit');
  }
  return text;
}

import { checkFormat } from '../api/formats';

/** A cluster id (a DNS-1123 label: what a Kubernetes object name built from it can carry). */
export const parseClusterId = (field: string, text: unknown): string => checkFormat('cluster-id', field, text);

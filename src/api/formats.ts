/**
 * The string formats of the strait.io API: each is checked by the same strict parser the code uses
 * (so a value the schema accepts is one the typed form can hold) and carries a pattern for the
 * CustomResourceDefinitions, where the API server checks shape only (RE2 syntax, no look-around).
 */
import { InputError } from '../errors';
import { parseCidr, parseIp } from '../net/cidr';

export interface ApiFormat {
  /** Throws an InputError saying what is wrong with `value`; returns nothing when it is well formed. */
  check(value: string): void;
  /** For the CRD: the API server's own format of the same name, when it has one. */
  kubernetesFormat?: string;
  /** For the CRD: a loose shape the API server can check. */
  pattern: string;
}

const dns1123Label = '[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?';
const labelPattern = new RegExp(`^${dns1123Label}$`);
// A Service's name: a DNS-1035 label (a letter first), as ValidateServiceName checks it.
const dns1035LabelPattern = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
const subdomainPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const macPattern = /^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$/;
const labNamePattern = /^[a-z][a-z0-9-]{0,10}$/;

const refuse = (value: string, reason: string): never => {
  throw new InputError('', value, reason);
};

export const apiFormats = {
  /** An IPv4 or IPv6 network with its host bits clear: 10.0.0.0/16, fd00::/64. */
  cidr: {
    check: (value: string) => void parseCidr('', value),
    kubernetesFormat: 'cidr',
    pattern: '^(([0-9]{1,3}\\.){3}[0-9]{1,3}/[0-9]{1,2}|[0-9a-fA-F:.]*:[0-9a-fA-F:.]*/[0-9]{1,3})$',
  },
  /** An IPv4 address (dotted quad, no leading zeros) or an IPv6 address (no zone). */
  ip: {
    check: (value: string) => void parseIp('', value),
    pattern: '^(([0-9]{1,3}\\.){3}[0-9]{1,3}|[0-9a-fA-F:.]*:[0-9a-fA-F:.]*)$',
  },
  mac: {
    check: (value: string) => {
      if (!macPattern.test(value)) refuse(value, 'expected a MAC address like 02:53:54:00:00:01');
    },
    kubernetesFormat: 'mac',
    pattern: macPattern.source,
  },
  /** A cluster id: a DNS-1123 label, so Kubernetes object names can be built from it. */
  'cluster-id': {
    check: (value: string) => {
      if (!labelPattern.test(value))
        refuse(value, 'a cluster id is 1 to 63 lowercase letters, digits or "-", starting and ending with a letter or digit');
    },
    pattern: labelPattern.source,
  },
  /** A DNS-1123 label: a namespace's name, a port's, an endpoint's hostname. */
  'dns-label': {
    check: (value: string) => {
      if (!labelPattern.test(value))
        refuse(value, 'a DNS-1123 label is 1 to 63 lowercase letters, digits or "-", starting and ending with a letter or digit');
    },
    pattern: labelPattern.source,
  },
  /** A Service's name: a DNS-1035 label. */
  'service-name': {
    check: (value: string) => {
      if (!dns1035LabelPattern.test(value))
        refuse(
          value,
          'a Service name is 1 to 63 lowercase letters, digits or "-", starting with a letter and ending with a letter or digit',
        );
    },
    pattern: dns1035LabelPattern.source,
  },
  /** A Kubernetes node name (a DNS-1123 subdomain); it also names files, so no "/" nor "..". */
  'node-name': {
    check: (value: string) => {
      if (value.length > 253 || !subdomainPattern.test(value))
        refuse(value, 'a node name is lowercase letters, digits, "-" and "." (a DNS-1123 subdomain)');
    },
    pattern: subdomainPattern.source,
  },
  /** The name of a namespaced Kubernetes object, like a DaemonSet's (a DNS-1123 subdomain). */
  'object-name': {
    check: (value: string) => {
      if (value.length > 253 || !subdomainPattern.test(value))
        refuse(value, 'an object name is lowercase letters, digits, "-" and "." (a DNS-1123 subdomain)');
    },
    pattern: subdomainPattern.source,
  },
  /** A lab node or pod name: interface and namespace names are derived from it, so short and plain. */
  'lab-name': {
    check: (value: string) => {
      if (!labNamePattern.test(value)) refuse(value, 'must be 1-11 characters: a-z, 0-9, -, starting with a letter');
    },
    pattern: '^[a-z][a-z0-9-]{0,10}$',
  },
} satisfies Record<string, ApiFormat>;

export type ApiFormatName = keyof typeof apiFormats;

/** Why `value` is not in `format`, in the parser's words; undefined when it is. */
export function formatProblem(format: ApiFormatName, value: unknown): string | undefined {
  if (typeof value !== 'string') return 'expected a string';
  try {
    apiFormats[format].check(value);
    return undefined;
  } catch (err) {
    if (!(err instanceof InputError)) throw err;
    return err.reason;
  }
}

/** `value` (of a field named `field`) in `format`, or an InputError naming the field. */
export function checkFormat(format: ApiFormatName, field: string, value: unknown): string {
  const problem = formatProblem(format, value);
  if (problem !== undefined) throw new InputError(field, value, problem);
  return value as string;
}

/**
 * The names CNI and the pool IPAM take from outside (the plugin's environment and stdin, the requests on
 * the service's socket): each rule once, as the pattern the wire schemas check it with
 * (pool-ipam-protocol-schema.ts, cni-network-config-schema.ts) and as a predicate for what is no
 * document (the CNI_* variables, src/cni/environment.ts). Loaded by the CNI plugin: no packages; and
 * so the patterns bound their names' lengths themselves, as the schemas' `maxLength` and `minLength` need
 * a helper of ajv's (ucs2length) at run time, and the plugin is copied to hosts without node_modules.
 */
import { InputError } from '../errors';

/** A Kubernetes object name (DNS-1123 subdomain, at most 253 characters): a pool's, a pod's. */
export const objectNamePattern = '^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';

/** A namespace's name (DNS-1123 label, at most 63 characters). */
export const namespaceNamePattern = '^(?=.{1,63}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?$';

/** A CNI network's name, as the spec allows it. */
export const networkNamePattern = '^[a-zA-Z0-9][a-zA-Z0-9_.-]*$';

/** CNI_CONTAINERID as the spec allows it (and libcni's skel checks it). */
export const containerIdPattern = '^[a-zA-Z0-9][a-zA-Z0-9_.-]*$';

/** A path to open: absolute, without NUL (the kernel would open the shorter path before it). */
export const absolutePathPattern = '^/[^\\u0000]*$';

/** A predicate of `pattern`, compiled as ajv compiles a schema's (unicode). */
const matches = (pattern: string) => {
  const regex = new RegExp(pattern, 'u');
  return (value: string) => regex.test(value);
};

export const isObjectName = matches(objectNamePattern);
export const isNamespaceName = matches(namespaceNamePattern);
export const isContainerId = matches(containerIdPattern);
export const isAbsolutePath = matches(absolutePathPattern);

/**
 * CNI_IFNAME as Linux allows it: 1-15 bytes, not "." nor "..", no "/", ":" or white space. The pattern
 * checks the characters; the bytes, which no pattern counts, checkInterfaceNameBytes.
 */
export const interfaceNamePattern = '^(?!\\.\\.?$)[^/:\\s]{1,15}$';
const maxInterfaceNameBytes = 15;
export const interfaceNameWords = 'an interface name (1-15 bytes, not "." or "..", no "/", ":" or white space)';

const interfaceNameCharacters = matches(interfaceNamePattern);
export const isInterfaceName = (name: string) => interfaceNameCharacters(name) && Buffer.byteLength(name) <= maxInterfaceNameBytes;

/** An interface name whose characters a schema checked, refused (as the schema words it) when longer than 15 bytes. */
export function checkInterfaceNameBytes(field: string, name: string): void {
  if (Buffer.byteLength(name) > maxInterfaceNameBytes) throw new InputError(field, name, `must be ${interfaceNameWords}`);
}

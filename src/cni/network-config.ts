/**
 * The network configuration on the plugin's stdin: the whole configuration of the interface plugin that
 * delegates to us (its own keys are none of our business), of which the `ipam` object is ours and checked
 * strictly, so a typo in a pool list fails the pod's ADD instead of silently using the cluster default.
 */
import { IpamError } from '../poolipam/ipam-error';
import { parseJsonText, quoted } from '../json-text';
import { type Attachment, type IpamNetworkOptions, cniErrorCodes, defaultIpamSocket, isAbsolutePath, isContainerId, isInterfaceName, isNetworkName, isObjectName } from '../poolipam/protocol';

export const supportedCniVersions = ['1.0.0', '1.1.0'];
export const latestCniVersion = '1.1.0';

type Json = Record<string, unknown>;

export interface NetworkConfig {
  cniVersion: string;
  /** The network's `name`. */
  name: string;
  socket: string;
  options: IpamNetworkOptions;
  /** The configuration as given, for the keys only some commands read. */
  raw: Json;
}

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

function invalid(field: string, value: unknown, reason: string): never {
  throw new IpamError(cniErrorCodes.invalidNetworkConfig, value === undefined ? `${field}: missing` : `${field}: ${reason} (got ${quoted(value)})`);
}

/** The configuration as JSON, and its cniVersion if it is one the plugin speaks (code 6, code 1). */
export function decodeNetworkConfig(stdin: string): { raw: Json; cniVersion: string } {
  const parsed = parseJsonText(stdin);
  if ('problem' in parsed) throw new IpamError(cniErrorCodes.decodeFailure, `stdin: the network configuration is not JSON: ${parsed.problem} (got ${quoted(stdin)})`);
  const raw = parsed.value;
  if (!isObject(raw)) throw new IpamError(cniErrorCodes.decodeFailure, `stdin: the network configuration must be a JSON object (got ${quoted(raw)})`);
  // libcni reads a configuration without cniVersion as 0.1.0.
  if (raw.cniVersion === undefined) throw new IpamError(cniErrorCodes.incompatibleVersion, `cniVersion: missing, which CNI reads as 0.1.0; strait-ipam speaks ${supportedCniVersions.join(' and ')}`);
  const { cniVersion } = raw;
  if (typeof cniVersion !== 'string') invalid('cniVersion', cniVersion, 'must be a string');
  if (!supportedCniVersions.includes(cniVersion)) {
    throw new IpamError(cniErrorCodes.incompatibleVersion, `cniVersion: strait-ipam speaks ${supportedCniVersions.join(' and ')} (got ${quoted(cniVersion)})`);
  }
  return { raw, cniVersion };
}

/**
 * VERSION's answer (spec "VERSION": `cniVersion` is the input's): in the version stdin asks in when it is
 * one strait-ipam speaks, else in the latest. It never fails: it is how a runtime of any version learns
 * which versions the plugin speaks.
 */
export function versionResult(stdin: string): { cniVersion: string; supportedVersions: string[] } {
  let asked: unknown;
  try {
    asked = (JSON.parse(stdin) as { cniVersion?: unknown } | null)?.cniVersion;
  } catch {
    asked = undefined;
  }
  const cniVersion = typeof asked === 'string' && supportedCniVersions.includes(asked) ? asked : latestCniVersion;
  return { cniVersion, supportedVersions: supportedCniVersions };
}

const ipamKeys: Record<string, (value: unknown, field: string) => void> = {
  type: (value, field) => (typeof value === 'string' && value !== '') || invalid(field, value, 'must be the plugin\'s name'),
  socket: (value, field) => {
    if (typeof value !== 'string' || !isAbsolutePath(value)) invalid(field, value, 'must be an absolute path');
    // sun_path holds 108 bytes with the terminating NUL.
    if (Buffer.byteLength(value) > 107) invalid(field, value, 'is longer than the 107 bytes a unix socket path can have');
  },
  default_ipv4_ippool: poolList,
  default_ipv6_ippool: poolList,
  detect_ip_conflict: (value, field) => typeof value === 'boolean' || invalid(field, value, 'must be true or false'),
  detect_gateway: (value, field) => typeof value === 'boolean' || invalid(field, value, 'must be true or false'),
};

function poolList(value: unknown, field: string): void {
  if (!Array.isArray(value)) invalid(field, value, 'must be a list of pool names');
  value.forEach((name, i) => (typeof name === 'string' && isObjectName(name)) || invalid(`${field}[${i}]`, name, 'must be a pool name (a DNS-1123 subdomain)'));
}

/** The rest of the configuration: `name` and the `ipam` object (code 7 for a bad value, 2 for a key we do not know). */
export function parseNetworkConfig(raw: Json, cniVersion: string): NetworkConfig {
  if (typeof raw.name !== 'string' || !isNetworkName(raw.name)) {
    invalid('name', raw.name, 'must be a network name (letters, digits, "_", "." and "-", starting with a letter or digit)');
  }
  const ipam = raw.ipam;
  if (!isObject(ipam)) invalid('ipam', ipam, 'must be an object');
  for (const [key, value] of Object.entries(ipam)) {
    // Own keys only: "constructor" or "__proto__" from the input must not find Object.prototype's members.
    const check = Object.hasOwn(ipamKeys, key) ? ipamKeys[key] : undefined;
    if (!check) throw new IpamError(cniErrorCodes.unsupportedField, `ipam.${key}: unsupported field (got ${quoted(value)}); strait-ipam knows ${Object.keys(ipamKeys).join(', ')}`);
    check(value, `ipam.${key}`);
  }
  return {
    cniVersion,
    name: raw.name,
    socket: (ipam.socket as string | undefined) ?? defaultIpamSocket,
    options: {
      defaultIpv4Pools: (ipam.default_ipv4_ippool as string[] | undefined) ?? [],
      defaultIpv6Pools: (ipam.default_ipv6_ippool as string[] | undefined) ?? [],
      detectConflict: (ipam.detect_ip_conflict as boolean | undefined) ?? true,
      detectGateway: (ipam.detect_gateway as boolean | undefined) ?? true,
    },
    raw,
  };
}

const validAttachmentsKey = 'cni.dev/valid-attachments';

/** GC's `cni.dev/valid-attachments`; required, since without it every allocation of the network would go. */
export function validAttachments(raw: Json): Attachment[] {
  const list = raw[validAttachmentsKey];
  if (!Array.isArray(list)) invalid(validAttachmentsKey, list, 'must be a list of {containerID, ifname}');
  return list.map((entry, i) => {
    const field = `${validAttachmentsKey}[${i}]`;
    if (!isObject(entry)) invalid(field, entry, 'must be an object {containerID, ifname}');
    const { containerID, ifname } = entry;
    if (typeof containerID !== 'string' || !isContainerId(containerID)) invalid(`${field}.containerID`, containerID, 'must be a container id');
    if (typeof ifname !== 'string' || !isInterfaceName(ifname)) invalid(`${field}.ifname`, ifname, 'must be an interface name');
    return { containerId: containerID, ifname };
  });
}

/** CHECK: the addresses of `prevResult.ips`, what the runtime holds from ADD; undefined without prevResult. */
export function prevResultAddresses(raw: Json): string[] | undefined {
  if (raw.prevResult === undefined) return undefined;
  if (!isObject(raw.prevResult)) invalid('prevResult', raw.prevResult, 'must be an object');
  const ips = raw.prevResult.ips ?? [];
  if (!Array.isArray(ips)) invalid('prevResult.ips', ips, 'must be a list');
  return ips.map((ip, i) => {
    const address = isObject(ip) ? ip.address : undefined;
    if (typeof address !== 'string') invalid(`prevResult.ips[${i}].address`, address, 'must be an address in CIDR notation');
    return address;
  });
}

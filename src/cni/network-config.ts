/**
 * The network configuration on the plugin's stdin: the whole configuration of the interface plugin that
 * delegates to us (its own keys are none of our business), of which the `ipam` object is ours and checked
 * strictly, so a typo in a pool list fails the pod's ADD instead of silently using the cluster default.
 * Checked by the validators the build compiled from src/api/cni-network-config-schema.ts.
 */
import { checkInterfaceNameBytes } from '../api/cni-names';
import type { CniNetworkConfigDocument } from '../api/cni-network-config-schema';
import { type ValidatorTypes, checkCompiled } from '../api/compiled-validators';
import { UnknownFieldError } from '../api/schema-errors';
import { InputError } from '../errors';
import { IpamError } from '../pool-ipam/ipam-error';
import { parseJsonText, quoted } from '../json-text';
import { type Attachment, type IpamNetworkOptions, cniErrorCodes, defaultIpamSocket, refusalMessage } from '../pool-ipam/protocol';

const supportedCniVersions = ['1.0.0', '1.1.0'];
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
  throw new IpamError(
    cniErrorCodes.invalidNetworkConfig,
    value === undefined ? `${field}: missing` : `${field}: ${reason} (got ${quoted(value)})`,
  );
}

/** The configuration as JSON, and its cniVersion if it is one the plugin speaks (code 6, code 1). */
export function decodeNetworkConfig(stdin: string): { raw: Json; cniVersion: string } {
  const parsed = parseJsonText(stdin);
  if ('problem' in parsed)
    throw new IpamError(
      cniErrorCodes.decodeFailure,
      `stdin: the network configuration is not JSON: ${parsed.problem} (got ${quoted(stdin)})`,
    );
  const raw = parsed.value;
  if (!isObject(raw))
    throw new IpamError(cniErrorCodes.decodeFailure, `stdin: the network configuration must be a JSON object (got ${quoted(raw)})`);
  // libcni reads a configuration without cniVersion as 0.1.0.
  if (raw.cniVersion === undefined)
    throw new IpamError(
      cniErrorCodes.incompatibleVersion,
      `cniVersion: missing, which CNI reads as 0.1.0; strait-ipam speaks ${supportedCniVersions.join(' and ')}`,
    );
  const { cniVersion } = raw;
  if (typeof cniVersion !== 'string') invalid('cniVersion', cniVersion, 'must be a string');
  if (!supportedCniVersions.includes(cniVersion)) {
    throw new IpamError(
      cniErrorCodes.incompatibleVersion,
      `cniVersion: strait-ipam speaks ${supportedCniVersions.join(' and ')} (got ${quoted(cniVersion)})`,
    );
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

/**
 * `value` checked by the compiled validator `name` (its schema: src/api/cni-network-config-schema.ts), under
 * `root`, then by `semantic` (what the schema cannot say): a field of the `ipam` object it does not know is
 * code 2, any other refusal code 7.
 */
function checked<N extends 'cniNetworkConfig' | 'cniPrevResult' | 'cniValidAttachments'>(
  name: N,
  value: unknown,
  root = '',
  semantic?: (document: ValidatorTypes[N]) => void,
): ValidatorTypes[N] {
  try {
    const document = checkCompiled(name, value, root);
    semantic?.(document);
    return document;
  } catch (err) {
    if (err instanceof UnknownFieldError) {
      throw new IpamError(
        cniErrorCodes.unsupportedField,
        `${err.field}: unsupported field (got ${quoted(err.value)}); strait-ipam knows ${err.known.join(', ')}`,
      );
    }
    if (err instanceof InputError) throw new IpamError(cniErrorCodes.invalidNetworkConfig, refusalMessage(err));
    throw err;
  }
}

/** sun_path holds 108 bytes with the terminating NUL: a longer path (in bytes, which no schema counts) cannot be connected to. */
function checkSocketPathBytes({ ipam: { socket } }: CniNetworkConfigDocument): void {
  if (socket !== undefined && Buffer.byteLength(socket) > 107)
    throw new InputError('ipam.socket', socket, 'is longer than the 107 bytes a unix socket path can have');
}

/** The rest of the configuration: `name` and the `ipam` object (code 7 for a bad value, 2 for a key we do not know). */
export function parseNetworkConfig(raw: Json, cniVersion: string): NetworkConfig {
  const { name, ipam } = checked('cniNetworkConfig', raw, '', checkSocketPathBytes);
  return {
    cniVersion,
    name,
    socket: ipam.socket ?? defaultIpamSocket,
    options: {
      defaultIpv4Pools: ipam.default_ipv4_ippool ?? [],
      defaultIpv6Pools: ipam.default_ipv6_ippool ?? [],
      detectConflict: ipam.detect_ip_conflict ?? true,
      detectGateway: ipam.detect_gateway ?? true,
    },
    raw,
  };
}

const validAttachmentsKey = 'cni.dev/valid-attachments';

/** GC's `cni.dev/valid-attachments`; required, since without it every allocation of the network would go. */
export function validAttachments(raw: Json): Attachment[] {
  return checked('cniValidAttachments', raw[validAttachmentsKey], validAttachmentsKey, (list) => {
    list.forEach(({ ifname }, i) => checkInterfaceNameBytes(`${validAttachmentsKey}[${i}].ifname`, ifname));
  }).map(({ containerID, ifname }) => ({ containerId: containerID, ifname }));
}

/** CHECK: the addresses of `prevResult.ips`, what the runtime holds from ADD; undefined without prevResult. */
export function prevResultAddresses(raw: Json): string[] | undefined {
  if (raw.prevResult === undefined) return undefined;
  return (checked('cniPrevResult', raw.prevResult, 'prevResult').ips ?? []).map((ip) => ip.address);
}

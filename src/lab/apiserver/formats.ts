/**
 * The string formats a real API server checks in CustomResource schemas (kube-openapi's registry), so a
 * value this server accepts is one kube-apiserver accepts: `cidr` is Go's net.ParseCIDR (host bits may be
 * set, unlike Strait's own stricter parser), `mac` is net.ParseMAC. Formats Kubernetes does not know are
 * not checked, as there.
 */
import type Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { InputError } from '../../errors';
import { addressBits, parseIp } from '../../net/cidr';

/** Go's net.ParseIP, which is also Strait's (dotted quads without leading zeros, IPv6 without a zone). */
function isIp(text: string): boolean {
  try {
    parseIp('', text);
    return true;
  } catch (err) {
    if (err instanceof InputError) return false;
    throw err;
  }
}

function isCidr(text: string): boolean {
  const match = /^([^/]+)\/(\d+)$/.exec(text);
  if (!match || !isIp(match[1]!)) return false;
  return Number(match[2]) <= addressBits(parseIp('', match[1]!).family);
}

/** 6, 8 or 20 octets separated by `:` or `-`, or in dotted groups of four hex digits. */
const macPattern = /^([0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}|[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){7}|[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){19}|[0-9a-fA-F]{4}(\.[0-9a-fA-F]{4}){2}|[0-9a-fA-F]{4}(\.[0-9a-fA-F]{4}){3}|[0-9a-fA-F]{4}(\.[0-9a-fA-F]{4}){9})$/;

/** The formats checked; a schema's other formats are dropped before compiling. */
export const kubernetesFormats = ['cidr', 'mac', 'ipv4', 'ipv6', 'date-time', 'date', 'hostname', 'uuid', 'byte', 'email', 'uri'];

export function addKubernetesFormats(ajv: Ajv): void {
  addFormats(ajv, ['ipv4', 'ipv6', 'date-time', 'date', 'hostname', 'uuid', 'byte', 'email', 'uri']);
  ajv.addFormat('cidr', { type: 'string', validate: isCidr });
  ajv.addFormat('mac', { type: 'string', validate: (text: string) => macPattern.test(text) });
}

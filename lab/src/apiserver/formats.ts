/**
 * The string formats a real API server checks in CustomResource schemas (kube-openapi's registry), so a
 * value this server accepts is one kube-apiserver accepts: `cidr` is Go's net.ParseCIDR (host bits may be
 * set, unlike Strait's own stricter parser), `mac` is net.ParseMAC. Formats Kubernetes does not know are
 * not checked, as there.
 */
import type { Format } from 'ajv';
import { fullFormats } from 'ajv-formats/dist/formats';
import { InputError } from '../../../src/errors';
import { addressBits, parseIp } from '../../../src/net/cidr';

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
const macPattern =
  /^([0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}|[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){7}|[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){19}|[0-9a-fA-F]{4}(\.[0-9a-fA-F]{4}){2}|[0-9a-fA-F]{4}(\.[0-9a-fA-F]{4}){3}|[0-9a-fA-F]{4}(\.[0-9a-fA-F]{4}){9})$/;

/**
 * The formats checked, as ajv format definitions (ajv-formats' where Kubernetes' agree); a schema's other
 * formats are dropped before compiling. Validators compiled at build time require them from here.
 */
export const kubernetesFormats: Record<string, Format> = {
  ...Object.fromEntries(
    (['ipv4', 'ipv6', 'date-time', 'date', 'hostname', 'uuid', 'byte', 'email', 'uri'] as const).map((name) => [name, fullFormats[name]]),
  ),
  cidr: { type: 'string', validate: isCidr },
  mac: { type: 'string', validate: (text: string) => macPattern.test(text) },
};

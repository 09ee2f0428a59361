/**
 * Validation of the values reconcilers put into `ip`/`bridge` batch lines. Each value is checked against
 * what the kernel accepts, so a line is always one command with the intended arguments.
 */
import { InputError } from '../errors';
import { formatCidr, formatIp, parseCidr, parseIp } from '../net/cidr';

/** A link name the kernel accepts: 1-15 bytes, no '/', ':' or whitespace, not "." or "..". */
export function linkName(field: string, value: unknown): string {
  if (typeof value !== 'string' || !/^[^/:\s]{1,15}$/.test(value) || value === '.' || value === '..' || Buffer.byteLength(value) > 15) {
    throw new InputError(field, value, 'expected a link name (1-15 bytes, no "/", ":" or whitespace)');
  }
  return value;
}

/** An integer in [min, max]. */
export function integer(field: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InputError(field, value, `expected an integer from ${min} to ${max}`);
  }
  return value;
}

export const ipv4Address = (field: string, value: unknown): string => {
  const ip = parseIp(field, value);
  if (ip.family !== 4) throw new InputError(field, value, 'expected an IPv4 address');
  return formatIp(ip);
};

export const ipAddress = (field: string, value: unknown): string => formatIp(parseIp(field, value));

/** An IPv4 network in canonical form; "default" and 0.0.0.0/0 are both the default route. */
export function ipv4Prefix(field: string, value: unknown): string {
  if (value === 'default' || value === '0.0.0.0/0') return '0.0.0.0/0';
  const cidr = parseCidr(field, value);
  if (cidr.family !== 4) throw new InputError(field, value, 'expected an IPv4 network');
  return formatCidr(cidr);
}

/** `ip -j` shows a host prefix without its /32 and the default route as "default". */
export const kernelIpv4Prefix = (dst: string): string => (dst === 'default' ? '0.0.0.0/0' : dst.includes('/') ? dst : `${dst}/32`);

/** A MAC address, lower case. */
export function macAddress(field: string, value: unknown): string {
  if (typeof value !== 'string' || !/^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$/.test(value)) {
    throw new InputError(field, value, 'expected a MAC address like 02:00:00:00:00:01');
  }
  return value.toLowerCase();
}

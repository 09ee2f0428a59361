/**
 * Validation of the values reconcilers put into rtnetlink changes: each value is checked against what the
 * kernel accepts, so a bad one is an InputError naming its field rather than a kernel refusal.
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

export const ipAddress = (field: string, value: unknown): string => formatIp(parseIp(field, value));

/** An IPv4 or IPv6 network in canonical form; "default" is IPv4's default route, as for `ip route`. */
export const ipPrefix = (field: string, value: unknown): string =>
  value === 'default' ? '0.0.0.0/0' : formatCidr(parseCidr(field, value));

/** A MAC address, lower case. */
export function macAddress(field: string, value: unknown): string {
  if (typeof value !== 'string' || !/^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$/.test(value)) {
    throw new InputError(field, value, 'expected a MAC address like 02:00:00:00:00:01');
  }
  return value.toLowerCase();
}

/**
 * The Pod and Namespace annotations that choose pools (rules 1 to 3 of the candidate rules), in our own
 * group `ipam.strait.io`, and their strict parsers: a malformed value is an InputError naming the
 * annotation and its text (the service answers CNI code 105), never silently a lower-priority rule.
 */
import { ipPoolNames, subnetNames } from '../api/resource-names';
import { InputError } from '../errors';
import { parseJsonText } from '../json-text';
import type { IpNumber } from './model';

export const podAnnotations = {
  /** Rule 1, one interface: {"interface"?: "eth0", "ipv4": ["subnet-a"], "ipv6": []} (StraitSubnet names). */
  subnet: 'ipam.strait.io/subnet',
  /** Rule 1, several interfaces: a list of the above, each with its "interface"; checked before `subnet`. */
  subnets: 'ipam.strait.io/subnets',
  /** Rule 2, one interface: {"interface"?: "eth0", "ipv4": ["pool-a", "pool-b"], "ipv6": [...]} (StraitIPPool names). */
  ippool: 'ipam.strait.io/ippool',
  /** Rule 2, several interfaces: a list of the above, each with its "interface"; checked before `ippool`. */
  ippools: 'ipam.strait.io/ippools',
  /** With rule 1: the size of the application pool, "2" (fixed) or "+1" (the replicas plus 1). */
  ippoolIpNumber: 'ipam.strait.io/ippool-ip-number',
} as const;

export const namespaceAnnotations = {
  /** Rule 3: JSON lists of StraitIPPool names, tried in order. */
  defaultIpv4Ippool: 'ipam.strait.io/default-ipv4-ippool',
  defaultIpv6Ippool: 'ipam.strait.io/default-ipv6-ippool',
} as const;

/** One interface's choice: StraitIPPool names (or StraitSubnet names for rule 1) per family, in order. */
export interface InterfaceSelection {
  /** Absent in the single-interface annotations: the choice applies to whichever interface is being added. */
  interface?: string;
  ipv4: string[];
  ipv6: string[];
}

/** When the annotation is absent: the replicas of the application plus one spare address. */
export const defaultIpNumber: IpNumber = { flexible: 1 };

const objectName = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** A Linux interface name: 1-15 bytes, no "/", ":" or whitespace (dev_valid_name). */
const interfaceName = /^[^/:\s]{1,15}$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function parseJson(key: string, text: string): unknown {
  const parsed = parseJsonText(text);
  if ('problem' in parsed) throw new InputError(key, text, `not valid JSON: ${parsed.problem}`);
  return parsed.value;
}

/** A list of object names; `what` names the list in the error ("ipv4", "item 1: ipv6"). */
function names(key: string, text: string, what: string, value: unknown): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new InputError(key, text, `${what} must be a list of names`);
  const seen = new Set<string>();
  for (const name of value) {
    if (typeof name !== 'string' || name.length > 253 || !objectName.test(name)) {
      throw new InputError(key, text, `${what}: ${JSON.stringify(name)} is not an object name (a DNS-1123 subdomain)`);
    }
    if (seen.has(name)) throw new InputError(key, text, `${what}: ${name} is named twice`);
    seen.add(name);
  }
  return value as string[];
}

function selection(key: string, text: string, value: unknown, where: string, interfaceRequired: boolean): InterfaceSelection {
  const at = where ? `${where}: ` : '';
  if (!isObject(value)) throw new InputError(key, text, `${at}expected an object {"interface", "ipv4", "ipv6"}`);
  for (const field of Object.keys(value)) {
    if (!['interface', 'ipv4', 'ipv6'].includes(field))
      throw new InputError(key, text, `${at}unknown key "${field}" (expected "interface", "ipv4" and "ipv6")`);
  }
  const result: InterfaceSelection = { ipv4: names(key, text, `${at}ipv4`, value.ipv4), ipv6: names(key, text, `${at}ipv6`, value.ipv6) };
  if (value.interface !== undefined) {
    if (typeof value.interface !== 'string' || !interfaceName.test(value.interface)) {
      throw new InputError(key, text, `${at}"interface" must be an interface name (1-15 characters, no "/", ":" or spaces)`);
    }
    result.interface = value.interface;
  } else if (interfaceRequired) {
    throw new InputError(key, text, `${at}"interface" is required in a list of interfaces`);
  }
  return result;
}

/** `ipam.strait.io/ippool` or `ipam.strait.io/subnet`: one selection, its interface optional. */
export function parseSelection(key: string, text: string): InterfaceSelection {
  return selection(key, text, parseJson(key, text), '', false);
}

/** `ipam.strait.io/ippools` or `ipam.strait.io/subnets`: one selection per interface, each naming it once. */
export function parseSelections(key: string, text: string): InterfaceSelection[] {
  const value = parseJson(key, text);
  if (!Array.isArray(value) || value.length === 0)
    throw new InputError(key, text, 'expected a non-empty list of {"interface", "ipv4", "ipv6"}');
  const list = value.map((item: unknown, i) => selection(key, text, item, `item ${i}`, true));
  const seen = new Set<string>();
  for (const item of list) {
    if (seen.has(item.interface!)) throw new InputError(key, text, `interface ${item.interface} is listed twice`);
    seen.add(item.interface!);
  }
  return list;
}

/** Rule 1 carves one application pool per family from one StraitSubnet. */
export function checkOneSubnetPerFamily(key: string, text: string, choice: InterfaceSelection): void {
  for (const family of ['ipv4', 'ipv6'] as const) {
    if (choice[family].length > 1) {
      throw new InputError(
        key,
        text,
        `${choice.interface ? `interface ${choice.interface}: ` : ''}${family} names ${choice[family].length} ${subnetNames.kind}s; an application pool is made from one`,
      );
    }
  }
}

/** `ipam.strait.io/ippool-ip-number`: "2" (exactly 2 addresses) or "+1" (the replicas plus 1). */
export function parseIpNumber(text: string): IpNumber {
  const match = /^(\+?)(0|[1-9]\d{0,4})$/.exec(text);
  const key = podAnnotations.ippoolIpNumber;
  if (!match) throw new InputError(key, text, 'expected a count like "2" or a margin over the replicas like "+1"');
  const n = Number(match[2]);
  if (match[1]) return { flexible: n };
  if (n === 0) throw new InputError(key, text, 'a fixed count must be at least 1');
  return { fixed: n };
}

/** `ipam.strait.io/default-ipv4-ippool` / `-ipv6-`: a JSON list of StraitIPPool names. */
export function parseNamespaceDefaultPools(key: string, text: string): string[] {
  const value = parseJson(key, text);
  if (!Array.isArray(value)) throw new InputError(key, text, `expected a JSON list of ${ipPoolNames.kind} names like ["pool-a"]`);
  return names(key, text, 'the list', value);
}

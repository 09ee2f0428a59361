/**
 * Reading a node dataplane spec (src/nodespec/spec.ts) from a JSON file. The file comes from another
 * process (the controller) and may be half-written, edited by hand or from another build, so every
 * field is checked for type and every address and prefix parsed before anything is applied; the first
 * problem is an InputError naming the field and its value. Unknown fields are refused too: a field the
 * agent does not know is one it would silently not apply.
 */
import { readFileSync } from 'node:fs';
import { InputError } from '../errors';
import { containsIp, parseCidr, parseIp, sameShape } from '../ipam/cidr';
import { type ClusterNodeSpec, type NatMappingSpec, type NodeDataplaneSpec, type OverlaySettings, type PeerSpec, peerTransports } from '../nodespec/spec';

type Json = Record<string, unknown>;

/** An object with exactly `keys` (and any of `optional`); its fields are named `${prefix}key` in errors. */
function object(field: string, value: unknown, keys: readonly string[], prefix = `${field}.`, optional: readonly string[] = []): Json {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InputError(field, value, 'expected an object');
  const record = value as Json;
  const at = (k: string) => `${prefix}${k}`;
  const known = [...keys, ...optional];
  for (const k of Object.keys(record)) if (!known.includes(k)) throw new InputError(at(k), record[k], `unknown field (known: ${known.join(', ')})`);
  for (const k of keys) if (!(k in record)) throw new InputError(at(k), undefined, 'is missing');
  return record;
}

function array(field: string, value: unknown): unknown[] {
  if (!Array.isArray(value)) throw new InputError(field, value, 'expected an array');
  return value;
}

function name(field: string, value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') throw new InputError(field, value, 'expected a non-empty string');
  return value;
}

function integer(field: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InputError(field, value, `expected a whole number from ${min} to ${max}`);
  }
  return value;
}

function oneOf<T extends string>(field: string, value: unknown, allowed: readonly T[]): T {
  if (!allowed.includes(value as T)) throw new InputError(field, value, `must be one of ${allowed.join(', ')}`);
  return value as T;
}

function cidr(field: string, value: unknown): string {
  parseCidr(field, value);
  return value as string;
}

function address(field: string, value: unknown): string {
  parseIp(field, value);
  return value as string;
}

function macAddress(field: string, value: unknown): string {
  if (typeof value !== 'string' || !/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i.test(value)) throw new InputError(field, value, 'expected a MAC address like 02:53:54:00:00:01');
  // Inner frames are addressed to it: a group address would be flooded, not delivered.
  if (parseInt(value.slice(0, 2), 16) & 1) throw new InputError(field, value, 'must be a unicast MAC address (lowest bit of the first octet clear)');
  return value;
}

const vniMax = 0xffffff;
const portField = (field: string, value: unknown) => integer(field, value, 1, 65535);

function overlay(value: unknown): OverlaySettings {
  const o = object('overlay', value, ['vni', 'port', 'mac']);
  return {
    vni: integer('overlay.vni', o.vni, 0, vniMax),
    port: portField('overlay.port', o.port),
    mac: macAddress('overlay.mac', o.mac),
  };
}

function peer(field: string, value: unknown, podCIDR: string, externalCIDR: string): PeerSpec {
  const p = object(field, value, ['clusterId', 'peerId', 'remotePodCIDR', 'remoteExternalCIDR', 'localNATPodCIDR', 'localNATExternalCIDR', 'endpoint', 'transport']);
  const endpoint = object(`${field}.endpoint`, p.endpoint, ['address', 'port']);
  const localNATPodCIDR = cidr(`${field}.localNATPodCIDR`, p.localNATPodCIDR);
  const localNATExternalCIDR = cidr(`${field}.localNATExternalCIDR`, p.localNATExternalCIDR);
  // The translation swaps network bits only: our networks and their views in the peer share a shape.
  if (!sameShape(parseCidr('podCIDR', podCIDR), parseCidr(`${field}.localNATPodCIDR`, localNATPodCIDR))) {
    throw new InputError(`${field}.localNATPodCIDR`, localNATPodCIDR, `must have the family and prefix length of podCIDR ${podCIDR}`);
  }
  if (!sameShape(parseCidr('externalCIDR', externalCIDR), parseCidr(`${field}.localNATExternalCIDR`, localNATExternalCIDR))) {
    throw new InputError(`${field}.localNATExternalCIDR`, localNATExternalCIDR, `must have the family and prefix length of externalCIDR ${externalCIDR}`);
  }
  return {
    clusterId: name(`${field}.clusterId`, p.clusterId),
    // 0 never names a peer: an all-zero map value must not match one.
    peerId: integer(`${field}.peerId`, p.peerId, 1, 0xffffffff),
    remotePodCIDR: cidr(`${field}.remotePodCIDR`, p.remotePodCIDR),
    remoteExternalCIDR: cidr(`${field}.remoteExternalCIDR`, p.remoteExternalCIDR),
    localNATPodCIDR,
    localNATExternalCIDR,
    endpoint: { address: address(`${field}.endpoint.address`, endpoint.address), port: portField(`${field}.endpoint.port`, endpoint.port) },
    transport: oneOf(`${field}.transport`, p.transport, peerTransports),
  };
}

function natMapping(field: string, value: unknown, externalCIDR: string): NatMappingSpec {
  const m = object(field, value, ['externalAddress', 'endpointAddress']);
  const externalAddress = address(`${field}.externalAddress`, m.externalAddress);
  if (!containsIp(parseCidr('externalCIDR', externalCIDR), parseIp(`${field}.externalAddress`, externalAddress))) {
    throw new InputError(`${field}.externalAddress`, externalAddress, `is not in externalCIDR ${externalCIDR}`);
  }
  return { externalAddress, endpointAddress: address(`${field}.endpointAddress`, m.endpointAddress) };
}

function clusterNode(field: string, value: unknown): ClusterNodeSpec {
  const n = object(field, value, ['name', 'underlayAddress', 'podCIDRs']);
  return {
    name: name(`${field}.name`, n.name),
    underlayAddress: address(`${field}.underlayAddress`, n.underlayAddress),
    podCIDRs: array(`${field}.podCIDRs`, n.podCIDRs).map((c, i) => cidr(`${field}.podCIDRs[${i}]`, c)),
  };
}

function unique<T>(items: readonly T[], key: (item: T) => string | number, field: (i: number) => string): void {
  const seen = new Set<string | number>();
  items.forEach((item, i) => {
    const k = key(item);
    if (seen.has(k)) throw new InputError(field(i), k, 'appears twice');
    seen.add(k);
  });
}

/** Pure: the spec in `value` (parsed JSON), checked field by field; the first problem throws. */
export function validateNodeSpec(value: unknown): NodeDataplaneSpec {
  const s = object('spec', value, ['clusterId', 'podCIDR', 'externalCIDR', 'transitAddress', 'node', 'activeGateway', 'overlay', 'peers', 'natMappings', 'nodes'], '');
  const podCIDR = cidr('podCIDR', s.podCIDR);
  const externalCIDR = cidr('externalCIDR', s.externalCIDR);
  const transitAddress = address('transitAddress', s.transitAddress);
  if (!containsIp(parseCidr('externalCIDR', externalCIDR), parseIp('transitAddress', transitAddress))) {
    throw new InputError('transitAddress', transitAddress, `is not in externalCIDR ${externalCIDR}`);
  }
  const node = object('node', s.node, ['name', 'role', 'underlayAddress'], 'node.', ['publicAddress']);
  const gateway = object('activeGateway', s.activeGateway, ['name', 'underlayAddress']);
  const spec: NodeDataplaneSpec = {
    clusterId: name('clusterId', s.clusterId),
    podCIDR,
    externalCIDR,
    transitAddress,
    node: {
      name: name('node.name', node.name),
      role: oneOf('node.role', node.role, ['gateway', 'worker'] as const),
      underlayAddress: address('node.underlayAddress', node.underlayAddress),
      ...(node.publicAddress !== undefined ? { publicAddress: address('node.publicAddress', node.publicAddress) } : {}),
    },
    activeGateway: { name: name('activeGateway.name', gateway.name), underlayAddress: address('activeGateway.underlayAddress', gateway.underlayAddress) },
    overlay: overlay(s.overlay),
    peers: array('peers', s.peers).map((p, i) => peer(`peers[${i}]`, p, podCIDR, externalCIDR)),
    natMappings: array('natMappings', s.natMappings).map((m, i) => natMapping(`natMappings[${i}]`, m, externalCIDR)),
    nodes: array('nodes', s.nodes).map((n, i) => clusterNode(`nodes[${i}]`, n)),
  };
  unique(spec.peers, (p) => p.clusterId, (i) => `peers[${i}].clusterId`);
  unique(spec.peers, (p) => p.peerId, (i) => `peers[${i}].peerId`);
  unique(spec.natMappings, (m) => m.externalAddress, (i) => `natMappings[${i}].externalAddress`);
  unique(spec.nodes, (n) => n.name, (i) => `nodes[${i}].name`);
  return spec;
}

/** Pure: a spec from the text of a spec file (`source` names the file in the error). */
export function parseNodeSpec(text: string, source: string): NodeDataplaneSpec {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    // Also what a half-written file looks like.
    throw new InputError(source, text.length > 80 ? `${text.slice(0, 80)}…` : text, `not valid JSON: ${(err as Error).message}`);
  }
  return validateNodeSpec(value);
}

/** The text of the spec file, or undefined while it does not exist (the controller has not written it yet). */
export function readSpecText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

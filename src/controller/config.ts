/**
 * The standalone controller's configuration (docs/lab.md, "Controller"): one YAML or JSON file, parsed
 * and checked whole before anything runs, so a typo is an InputError naming the field and value rather
 * than a controller that peers with the wrong networks.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { InputError } from '../errors';
import { containsIp, cidrsOverlap, formatCidr, parseCidr, parseIp } from '../ipam/cidr';
import { parseClusterId } from '../ipam/cluster-id';
import { type HomeNetworksSpec, parseHomeNetworks } from '../ipam/home-networks';
import type { ClusterNodeSpec } from '../nodespec/spec';

export interface NodeConfig extends ClusterNodeSpec {
  /** Reachable from the other clusters' gateways; preferred when electing the gateway. */
  publicAddress?: string;
}

/** An endpoint of `fromPeer` reflected to `to`, both peers of ours (we are their hub). */
export interface ReflectionConfig {
  to: string;
  fromPeer: string;
  /** In fromPeer's own view (its CNI's address). */
  podIP: string;
}

export interface ControllerConfig {
  clusterId: string;
  runDir: string;
  home: HomeNetworksSpec;
  peers: string[];
  /** The peers whose traffic the gateways encrypt (IPsec); both clusters of a peering must say so. */
  encryptedPeers: string[];
  reflections: ReflectionConfig[];
  nodes: NodeConfig[];
  /** Seconds without a fresh Ready heartbeat after which a node is not Ready. */
  heartbeatTimeout: number;
  /** Seconds between reconciles. */
  interval: number;
}

export const defaultRunDir = '/run/strait/lab';
export const defaultHeartbeatTimeout = 1.5;
export const defaultInterval = 0.2;

const topLevelKeys = ['clusterId', 'runDir', 'podCIDR', 'externalCIDR', 'serviceCIDR', 'reserved', 'pools', 'peers', 'reflections', 'nodes', 'heartbeatTimeout', 'interval'];
const nodeKeys = ['name', 'underlayAddress', 'podCIDRs', 'publicAddress'];
const reflectionKeys = ['to', 'fromPeer', 'podIP'];
const peerKeys = ['clusterId', 'encryption'];
const encryptions = ['none', 'ipsec'];

/** Node names become file names (nodes/<node>.json), so they are DNS-1123 subdomains: no "/" nor "..". */
const nodeNamePattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function objectAt(field: string, value: unknown, allowed: readonly string[]): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InputError(field, value, 'expected a mapping');
  const object = value as Record<string, unknown>;
  for (const key of Object.keys(object)) {
    if (!allowed.includes(key)) throw new InputError(field === '' ? key : `${field}.${key}`, object[key], `unknown setting; expected one of ${allowed.join(', ')}`);
  }
  return object;
}

function listAt(field: string, value: unknown): unknown[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new InputError(field, value, 'expected a list');
  return value;
}

function stringAt(field: string, value: unknown): string {
  if (typeof value !== 'string' || value === '') throw new InputError(field, value, 'expected a non-empty string');
  return value;
}

function secondsAt(field: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > 3600) {
    throw new InputError(field, value, 'expected a number of seconds greater than 0 and at most 3600');
  }
  return value;
}

function parseNode(field: string, value: unknown, podCIDR: string): NodeConfig {
  const o = objectAt(field, value, nodeKeys);
  const name = stringAt(`${field}.name`, o.name);
  if (name.length > 253 || !nodeNamePattern.test(name)) {
    throw new InputError(`${field}.name`, name, 'a node name is lowercase letters, digits, "-" and "." (a DNS-1123 subdomain)');
  }
  const underlayAddress = stringAt(`${field}.underlayAddress`, o.underlayAddress);
  parseIp(`${field}.underlayAddress`, underlayAddress);
  const clusterPods = parseCidr('podCIDR', podCIDR);
  const podCIDRs = listAt(`${field}.podCIDRs`, o.podCIDRs).map((text, i) => {
    const cidr = parseCidr(`${field}.podCIDRs[${i}]`, text);
    // A node's pods outside the cluster PodCIDR would be neither translated nor routed.
    if (!containsIp(clusterPods, { family: cidr.family, value: cidr.base }) || cidr.prefix < clusterPods.prefix) {
      throw new InputError(`${field}.podCIDRs[${i}]`, text, `is not inside the cluster podCIDR ${podCIDR}`);
    }
    return formatCidr(cidr);
  });
  const node: NodeConfig = { name, underlayAddress, podCIDRs };
  if (o.publicAddress !== undefined) {
    parseIp(`${field}.publicAddress`, o.publicAddress);
    node.publicAddress = o.publicAddress as string;
  }
  return node;
}

function parseReflection(field: string, value: unknown, peers: readonly string[]): ReflectionConfig {
  const o = objectAt(field, value, reflectionKeys);
  const to = parseClusterId(`${field}.to`, o.to);
  const fromPeer = parseClusterId(`${field}.fromPeer`, o.fromPeer);
  for (const [key, id] of [['to', to], ['fromPeer', fromPeer]] as const) {
    if (!peers.includes(id)) throw new InputError(`${field}.${key}`, id, `is not one of our peers (${peers.join(', ') || 'none'}); only a hub peered with both reflects`);
  }
  if (to === fromPeer) throw new InputError(`${field}.to`, to, 'equals fromPeer; a peer reaches its own pods directly');
  parseIp(`${field}.podIP`, o.podIP);
  return { to, fromPeer, podIP: o.podIP as string };
}

/** A peer: its cluster id, or `{clusterId, encryption: none|ipsec}`; an encrypted one is added to `encrypted`. */
function parsePeer(field: string, value: unknown, encrypted: string[]): string {
  if (typeof value === 'string') return parseClusterId(field, value);
  const o = objectAt(field, value, peerKeys);
  const id = parseClusterId(`${field}.clusterId`, o.clusterId);
  const encryption = o.encryption ?? 'none';
  if (typeof encryption !== 'string' || !encryptions.includes(encryption)) throw new InputError(`${field}.encryption`, encryption, `expected one of ${encryptions.join(', ')}`);
  if (encryption === 'ipsec') encrypted.push(id);
  return id;
}

/** Checks a parsed document (the YAML or JSON file's content). */
export function parseControllerConfig(document: unknown): ControllerConfig {
  const o = objectAt('', document, topLevelKeys);
  const clusterId = parseClusterId('clusterId', o.clusterId);
  const runDir = o.runDir === undefined ? defaultRunDir : stringAt('runDir', o.runDir);
  const home: HomeNetworksSpec = {
    podCIDR: o.podCIDR as string,
    externalCIDR: o.externalCIDR as string,
    ...(o.serviceCIDR !== undefined ? { serviceCIDR: o.serviceCIDR as string } : {}),
    ...(o.reserved !== undefined ? { reserved: listAt('reserved', o.reserved) as string[] } : {}),
    ...(o.pools !== undefined ? { pools: listAt('pools', o.pools) as string[] } : {}),
  };
  // The IPAM checks the same again on start; checking here refuses the file before anything runs.
  parseHomeNetworks(home);

  const encryptedPeers: string[] = [];
  const peers = listAt('peers', o.peers).map((value, i) => {
    const id = parsePeer(`peers[${i}]`, value, encryptedPeers);
    if (id === clusterId) throw new InputError(`peers[${i}]`, id, 'is this cluster; a cluster does not peer with itself');
    return id;
  });
  peers.forEach((id, i) => {
    if (peers.indexOf(id) !== i) throw new InputError(`peers[${i}]`, id, 'listed twice');
  });

  const reflections = listAt('reflections', o.reflections).map((value, i) => parseReflection(`reflections[${i}]`, value, peers));
  reflections.forEach((r, i) => {
    const first = reflections.findIndex((other) => other.to === r.to && other.fromPeer === r.fromPeer && parseIp('podIP', other.podIP).value === parseIp('podIP', r.podIP).value);
    if (first !== i) throw new InputError(`reflections[${i}]`, r, `repeats reflections[${first}]`);
  });

  const nodes = listAt('nodes', o.nodes).map((value, i) => parseNode(`nodes[${i}]`, value, home.podCIDR));
  if (nodes.length === 0) throw new InputError('nodes', o.nodes, 'at least one node is needed to carry the gateway');
  nodes.forEach((node, i) => {
    const first = nodes.findIndex((other) => other.name === node.name);
    if (first !== i) throw new InputError(`nodes[${i}].name`, node.name, `repeats nodes[${first}].name`);
  });
  const podCIDRs = nodes.flatMap((node, i) => node.podCIDRs.map((text, j) => ({ field: `nodes[${i}].podCIDRs[${j}]`, text, cidr: parseCidr('podCIDRs', text) })));
  for (let i = 0; i < podCIDRs.length; i++) {
    for (let j = 0; j < i; j++) {
      if (cidrsOverlap(podCIDRs[i]!.cidr, podCIDRs[j]!.cidr)) {
        throw new InputError(podCIDRs[i]!.field, podCIDRs[i]!.text, `overlaps ${podCIDRs[j]!.field} ${podCIDRs[j]!.text}; a pod lives on one node`);
      }
    }
  }

  return {
    clusterId,
    runDir,
    home,
    peers,
    encryptedPeers,
    reflections,
    nodes,
    heartbeatTimeout: secondsAt('heartbeatTimeout', o.heartbeatTimeout, defaultHeartbeatTimeout),
    interval: secondsAt('interval', o.interval, defaultInterval),
  };
}

/** Reads FILE as YAML 1.2 (JSON is a subset of it) and checks it. */
export function loadControllerConfig(path: string): ControllerConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new InputError('config', path, `cannot read: ${(err as Error).message}`);
  }
  let document: unknown;
  try {
    document = parseYaml(text);
  } catch (err) {
    throw new InputError('config', path, `not valid YAML or JSON: ${(err as Error).message}`);
  }
  return parseControllerConfig(document);
}

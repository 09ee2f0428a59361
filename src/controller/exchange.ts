/**
 * The run directory as the lab's stand-in for the API server (docs/lab.md): where each file lives, who
 * writes it, and the file-based replication of NetworkConfigs. Every file has one writer and is replaced
 * atomically; readers poll, and a file that is missing or unreadable this round is simply read again on
 * the next one.
 */
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { NetworkConfigSpec, NetworkConfigStatus } from '../netmgr/network-config';
import { parseGatewayEndpoint } from '../netmgr/network-config';
import { writeFileAtomic } from '../store/atomic-file';
import type { Heartbeat } from './election';

/** Paths relative to the run directory. */
export const runDirPaths = {
  spec: (owner: string, recipient: string) => `exchange/${owner}/${recipient}.spec.json`,
  status: (owner: string, recipient: string) => `exchange/${owner}/${recipient}.status.json`,
  ipam: (cluster: string) => `${cluster}/ipam.json`,
  nodeSpec: (cluster: string, node: string) => `${cluster}/nodes/${node}.json`,
  heartbeat: (cluster: string, node: string) => `${cluster}/status/${node}.json`,
  reflections: (cluster: string) => `${cluster}/reflections.json`,
  controllerStatus: (cluster: string) => `${cluster}/controller.json`,
};

/** The run directory as the controller sees it; the tests use an in-memory one. */
export interface RunDirFiles {
  /** The file's text, or undefined when it does not exist. */
  read(path: string): string | undefined;
  /** File names in a directory, or [] when it does not exist. */
  list(dir: string): string[];
  /** Replaces the file atomically. */
  write(path: string, text: string): void;
  /** No error when it is already gone. */
  remove(path: string): void;
}

/**
 * The status we write on a peer's NetworkConfig, with the networks it answers: the peer accepts it only
 * for its current networks, so a status left from before a PodCIDR change is never taken as the answer.
 */
export interface StatusDocument extends NetworkConfigStatus {
  observed: { podCIDR: string; externalCIDR: string };
}

export interface ExchangeView {
  /** NetworkConfig specs addressed to us, by owner. */
  specsForUs: Map<string, NetworkConfigSpec>;
  /** The peers' statuses on our specs, by peer. */
  statusesOfOurs: Map<string, StatusDocument>;
  /** Files this controller wrote before (exchange files and node specs), to delete what is no longer wanted. */
  written: string[];
  /** Files that are there but could not be used, and why. */
  problems: string[];
}

export function jsonText(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

function readJson(files: RunDirFiles, path: string, problems: string[]): unknown {
  const text = files.read(path);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    problems.push(`${path}: not valid JSON; read again next round`);
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Only the shape is checked here; the networks are checked by the IPAM when the spec is processed. */
function asSpec(value: unknown, owner: string, recipient: string): NetworkConfigSpec | string {
  if (!isObject(value)) return 'expected an object';
  if (value.clusterId !== owner) return `clusterId is ${JSON.stringify(value.clusterId)}, expected its directory's owner ${owner}`;
  if (value.remoteClusterId !== recipient) return `remoteClusterId is ${JSON.stringify(value.remoteClusterId)}, expected ${recipient}`;
  if (typeof value.podCIDR !== 'string' || typeof value.externalCIDR !== 'string') return 'podCIDR and externalCIDR must be strings';
  try {
    return { clusterId: owner, remoteClusterId: recipient, podCIDR: value.podCIDR, externalCIDR: value.externalCIDR, endpoint: parseGatewayEndpoint('endpoint', value.endpoint) };
  } catch (err) {
    return (err as Error).message;
  }
}

function asStatus(value: unknown): StatusDocument | string {
  if (!isObject(value)) return 'expected an object';
  const { processed, remappedPodCIDR, remappedExternalCIDR, observed } = value;
  if (typeof processed !== 'boolean' || typeof remappedPodCIDR !== 'string' || typeof remappedExternalCIDR !== 'string') {
    return 'expected {processed, remappedPodCIDR, remappedExternalCIDR, observed}';
  }
  if (!isObject(observed) || typeof observed.podCIDR !== 'string' || typeof observed.externalCIDR !== 'string') return 'observed must be {podCIDR, externalCIDR}';
  return { processed, remappedPodCIDR, remappedExternalCIDR, observed: { podCIDR: observed.podCIDR, externalCIDR: observed.externalCIDR } };
}

const specSuffix = '.spec.json';
const statusSuffix = '.status.json';

/** What the other controllers have replicated to us, and what we wrote before. */
export function readExchange(files: RunDirFiles, clusterId: string): ExchangeView {
  const view: ExchangeView = { specsForUs: new Map(), statusesOfOurs: new Map(), written: [], problems: [] };
  const use = <T>(path: string, parsed: T | string, keep: (value: T) => void): void => {
    if (typeof parsed === 'string') view.problems.push(`${path}: ${parsed}`);
    else keep(parsed);
  };
  for (const owner of files.list('exchange')) {
    if (owner === clusterId) continue;
    const specPath = runDirPaths.spec(owner, clusterId);
    const spec = readJson(files, specPath, view.problems);
    if (spec !== undefined) use(specPath, asSpec(spec, owner, clusterId), (s) => view.specsForUs.set(owner, s));
    if (files.read(runDirPaths.status(owner, clusterId)) !== undefined) view.written.push(runDirPaths.status(owner, clusterId));
  }
  for (const name of files.list(`exchange/${clusterId}`)) {
    const path = `exchange/${clusterId}/${name}`;
    if (name.endsWith(specSuffix)) view.written.push(path);
    if (!name.endsWith(statusSuffix)) continue;
    const peer = name.slice(0, -statusSuffix.length);
    const status = readJson(files, path, view.problems);
    if (status !== undefined) use(path, asStatus(status), (s) => view.statusesOfOurs.set(peer, s));
  }
  for (const name of files.list(`${clusterId}/nodes`)) {
    if (name.endsWith('.json')) view.written.push(`${clusterId}/nodes/${name}`);
  }
  return view;
}

/** The nodes' heartbeats; a missing or malformed one is no heartbeat (the node is not Ready). */
export function readHeartbeats(files: RunDirFiles, clusterId: string, nodes: readonly string[]): Map<string, Heartbeat> {
  const heartbeats = new Map<string, Heartbeat>();
  for (const node of nodes) {
    const value = readJson(files, runDirPaths.heartbeat(clusterId, node), []);
    if (isObject(value) && typeof value.ready === 'boolean' && typeof value.time === 'string') {
      heartbeats.set(node, { node, ready: value.ready, time: value.time, ...(typeof value.dataplane === 'string' ? { dataplane: value.dataplane } : {}) });
    }
  }
  return heartbeats;
}

/** Writes the files whose content differs, deletes the unwanted ones; returns what it touched. */
export function syncFiles(files: RunDirFiles, wanted: ReadonlyMap<string, string>, unwanted: readonly string[]): { written: string[]; deleted: string[] } {
  const written: string[] = [];
  const deleted: string[] = [];
  for (const [path, text] of wanted) {
    if (files.read(path) === text) continue;
    files.write(path, text);
    written.push(path);
  }
  for (const path of unwanted) {
    if (files.read(path) === undefined) continue;
    files.remove(path);
    deleted.push(path);
  }
  return { written, deleted };
}


/** The run directory on disk. */
export function diskRunDir(runDir: string): RunDirFiles {
  const missing = (err: unknown) => ['ENOENT', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code ?? '');
  return {
    read(path) {
      try {
        return readFileSync(join(runDir, path), 'utf8');
      } catch (err) {
        if (missing(err)) return undefined;
        throw err;
      }
    },
    list(dir) {
      try {
        return readdirSync(join(runDir, dir));
      } catch (err) {
        if (missing(err)) return [];
        throw err;
      }
    },
    write(path, text) {
      writeFileAtomic(join(runDir, path), text);
    },
    remove(path) {
      rmSync(join(runDir, path), { force: true });
    },
  };
}

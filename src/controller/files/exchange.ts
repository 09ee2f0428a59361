/**
 * The run directory as the controller's stand-in for the API server (docs/lab.md; the layout is
 * src/api/run-dir.ts): the file-based replication of NetworkConfigs and the nodes' heartbeats. Every file has one writer and is replaced
 * atomically; readers poll, and a file that is missing or unreadable this round is simply read again on
 * the next one.
 */
import { existsSync, readdirSync, realpathSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { readRegularFile } from '../../store/regular-file';
import { type NetworkConfigSpec, readNetworkConfigSpec, readNetworkConfigStatus } from '../../api/network-config';
import { runDirPaths } from '../../api/run-dir';
import { InputError, StateError } from '../../errors';
import { parseJsonText } from '../../json-text';
import { writeFileAtomic } from '../../store/atomic-file';
import { readNodeDataplaneStatus } from '../../api/node-dataplane';
import { nodeDataplaneObject } from '../../api/node-dataplane-object';
import { type ExchangeView, emptyExchange } from '../exchange-view';
import type { ReconcileResult } from '../reconcile';
import type { Heartbeat } from '../election';

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

function jsonText(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** The file's document; undefined when it is missing, or (with a problem) not JSON or no regular file. */
function readJson(files: RunDirFiles, path: string, problems: string[]): unknown {
  let text: string | undefined;
  try {
    text = files.read(path);
  } catch (err) {
    // A peer's file that is no regular file of ours (a fifo, a symlink, a directory, too large) is its problem, not a failed round.
    problems.push(`${path}: ${(err as Error).message}; read again next round`);
    return undefined;
  }
  if (text === undefined) return undefined;
  const parsed = parseJsonText(text);
  if ('problem' in parsed) problems.push(`${path}: not valid JSON (${parsed.problem}); read again next round`);
  return 'value' in parsed ? parsed.value : undefined;
}

/** A file's text; undefined when nothing is there; null when something is there that cannot be read. */
function readOrUnreadable(files: RunDirFiles, path: string): string | undefined | null {
  try {
    return files.read(path);
  } catch {
    return null;
  }
}

/** A replicated document, checked by its schema; why it cannot be used as a string. */
function checked<T>(read: () => T): T | string {
  try {
    return read();
  } catch (err) {
    return (err as Error).message;
  }
}

/** The spec in `exchange/<owner>/<us>.spec.json` must be the owner's and for us. */
function specFrom(value: unknown, owner: string, recipient: string): NetworkConfigSpec {
  const spec = readNetworkConfigSpec(value);
  if (spec.clusterId !== owner) throw new InputError('spec.clusterId', spec.clusterId, `expected its directory's owner ${owner}`);
  if (spec.remoteClusterId !== recipient) throw new InputError('spec.remoteClusterId', spec.remoteClusterId, `expected ${recipient}`);
  return spec;
}

const specSuffix = '.spec.json';
const statusSuffix = '.status.json';

/** What the other controllers have replicated to us, and what we wrote before. */
export function readExchange(files: RunDirFiles, clusterId: string): ExchangeView {
  const view = emptyExchange();
  const use = <T>(path: string, parsed: T | string, keep: (value: T) => void): void => {
    if (typeof parsed === 'string') view.problems.push(`${path}: ${parsed}`);
    else keep(parsed);
  };
  for (const owner of files.list('exchange')) {
    if (owner === clusterId) continue;
    const specPath = runDirPaths.spec(owner, clusterId);
    const problems = view.problems.length;
    const spec = readJson(files, specPath, view.problems);
    if (spec !== undefined)
      use(
        specPath,
        checked(() => specFrom(spec, owner, clusterId)),
        (s) => view.specsForUs.set(owner, s),
      );
    if (view.problems.length > problems) view.unreadableSpecs.set(owner, view.problems.at(-1)!);
    // Something there that cannot be read is ours to replace too (syncFiles).
    if (readOrUnreadable(files, runDirPaths.status(owner, clusterId)) !== undefined)
      view.written.push(runDirPaths.status(owner, clusterId));
  }
  for (const name of files.list(`exchange/${clusterId}`)) {
    const path = `exchange/${clusterId}/${name}`;
    if (name.endsWith(specSuffix)) view.written.push(path);
    if (!name.endsWith(statusSuffix)) continue;
    const peer = name.slice(0, -statusSuffix.length);
    const problems = view.problems.length;
    const status = readJson(files, path, view.problems);
    if (status !== undefined)
      use(
        path,
        checked(() => readNetworkConfigStatus(status)),
        (s) => view.statusesOfOurs.set(peer, s),
      );
    if (view.problems.length > problems) view.unreadableStatuses.set(peer, view.problems.at(-1)!);
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
    if (value === undefined) continue;
    // A heartbeat that is not a valid status (another build, an edit by hand) says nothing: not Ready.
    const status = checked(() => readNodeDataplaneStatus(value));
    if (typeof status !== 'string') heartbeats.set(node, status);
  }
  return heartbeats;
}

/** Writes the files whose content differs, deletes the unwanted ones; returns what it touched. */
export function syncFiles(
  files: RunDirFiles,
  wanted: ReadonlyMap<string, string>,
  unwanted: readonly string[],
): { written: string[]; deleted: string[] } {
  const written: string[] = [];
  const deleted: string[] = [];
  // What cannot be read (a fifo or a link a peer put there) is replaced, or removed: the link itself, never what it points to.
  for (const [path, text] of wanted) {
    if (readOrUnreadable(files, path) === text) continue;
    files.write(path, text);
    written.push(path);
  }
  for (const path of unwanted) {
    if (readOrUnreadable(files, path) === undefined) continue;
    files.remove(path);
    deleted.push(path);
  }
  return { written, deleted };
}

/** The largest document of the run directory read: an offer of 10,000 endpoints is 1.5 MiB. */
const maxDocumentBytes = 16 << 20;

/**
 * The run directory on disk. Peers write into it: a file is read only when it is a regular file of at
 * most 16 MiB reached through no symbolic link (a fifo would block the reader, a link point elsewhere),
 * and a directory reached through a symbolic link lists as empty, so nothing the controller deletes
 * among what it lists lies outside the run directory.
 */
export function diskRunDir(runDir: string): RunDirFiles {
  const missing = (err: unknown) => ['ENOENT', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code ?? '');
  // The run directory's own real path, resolved once it exists (not again at every read of every round).
  let root: string | undefined;
  const real = () => (root ??= realpathSync(runDir));
  const direct = (path: string) => {
    try {
      return realpathSync(join(runDir, path)) === join(real(), path);
    } catch {
      return true; // missing: nothing to follow
    }
  };
  return {
    read(path) {
      if (!direct(dirname(path))) throw new Error(`${path}: a directory on its path is a symbolic link`);
      let text: string | undefined;
      try {
        const full = join(runDir, path);
        if (existsSync(full) && statSync(full).size > maxDocumentBytes) throw new Error(`${path}: larger than ${maxDocumentBytes} bytes`);
        text = readRegularFile(full);
      } catch (err) {
        if (missing(err)) return undefined;
        throw err instanceof StateError ? new Error(err.message) : err;
      }
      return text;
    },
    list(dir) {
      if (!direct(dir)) return [];
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

/**
 * The run directory's side of a reconcile: every file the controller wants (path → content: our
 * NetworkConfigs, our answers on the peers', the node specs, reflections, our status) and the files it
 * wrote before and no longer wants.
 */
export function runDirFiles(
  result: ReconcileResult,
  clusterId: string,
  written: readonly string[],
): { files: Map<string, string>; deletes: string[] } {
  const files = new Map<string, string>();
  for (const [peer, spec] of result.ourNetworkConfigs) files.set(runDirPaths.spec(clusterId, peer), jsonText(spec));
  for (const [peer, answer] of result.answers) files.set(runDirPaths.status(peer, clusterId), jsonText(answer));
  for (const spec of result.nodeSpecs.values())
    files.set(runDirPaths.nodeSpec(clusterId, spec.node.name), jsonText(nodeDataplaneObject(spec)));
  files.set(runDirPaths.reflections(clusterId), jsonText(result.reflections));
  files.set(runDirPaths.controllerStatus(clusterId), jsonText(result.status));
  return { files, deletes: written.filter((path) => !files.has(path)) };
}

/**
 * The standalone controller's loop, the imperative shell around reconcile(): every interval it reads the
 * run directory, runs one step, saves the IPAM state when it changed, writes the files whose content
 * changed and deletes the ones no longer wanted. It holds the IPAM store's writer lock for its whole
 * life, so a second controller for the same cluster is refused. Logs say what changed, not every tick.
 */
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { InputError, StateError } from '../../errors';
import { ipamStateCodec } from '../../network-ipam/state-document';
import type { IpamPlanes } from '../../network-ipam/planes';

import { type Logger, createLogger } from '../../log';
import { FileStore } from '../../store/file-store';
import type { ControllerConfig } from '../../api/controller-config';
import { runDirPaths } from '../../api/run-dir';
import { type RunDirFiles, diskRunDir, readExchange, readHeartbeats, runDirFiles, syncFiles } from './exchange';
import { type ServicesRound, reconcileServices } from './services';
import { type ControllerStatus, readControllerStatus } from '../../api/controller-status';
import { parseJsonDocument } from '../../api/document';
import type { GatewayTenure } from '../election';
import { type ReconcileResult, reconcile } from '../reconcile';
import { type Sighting, heartbeatsAsSeen, observeRenewals } from '../sightings';
import type { ControllerMetrics } from '../../metrics/controller-metrics';

export interface RunOptions {
  /** One reconcile, then return. */
  once?: boolean;
  /** Stops the loop after the current step. */
  signal?: AbortSignal;
  log?: Logger;
  /** Told of every reconcile. */
  metrics?: ControllerMetrics;
}

/** The gateway in our last status, so a restart keeps a gateway that is still Ready. */
function lastGateway(files: RunDirFiles, config: ControllerConfig): GatewayTenure | undefined {
  const text = files.read(runDirPaths.controllerStatus(config.clusterId));
  if (text === undefined) return undefined;
  try {
    const { gateway } = readControllerStatus(parseJsonDocument(text, runDirPaths.controllerStatus(config.clusterId)));
    return config.nodes.some((n) => n.name === gateway) ? { gateway } : undefined;
  } catch {
    return undefined; // unreadable: elect afresh
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

function logChanges(
  log: Logger,
  before: ReconcileResult | undefined,
  after: ReconcileResult,
  written: readonly string[],
  deleted: readonly string[],
): void {
  const { gateway, reason } = after.election;
  if (before?.election.gateway !== gateway) {
    log.info(
      { gateway, previous: before?.election.gateway ?? null, reason, readyNodes: after.status.readyNodes },
      before ? 'gateway changed' : 'gateway elected',
    );
  }
  if (reason === 'no-ready-node' && before?.election.reason !== 'no-ready-node') {
    log.warn({ gateway }, 'no node is Ready (no fresh heartbeat saying ready); keeping the gateway');
  }
  for (const peer of after.status.peers) {
    const previous = before?.status.peers.find((p) => p.clusterId === peer.clusterId)?.state;
    if (previous !== peer.state)
      log.info(
        { peer: peer.clusterId, state: peer.state, previous: previous ?? null, ...(peer.reason ? { reason: peer.reason } : {}) },
        `peer ${peer.state}`,
      );
  }
  for (const peer of after.removedPeers) log.info({ peer }, 'peer removed');
  for (const path of written) {
    const node = /\/nodes\/([^/]+)\.json$/.exec(path)?.[1];
    if (node) log.info({ node, path }, 'node spec written');
    const imported = /\/imports\/([^/]+)\.json$/.exec(path)?.[1];
    if (imported) log.info({ service: imported.replace('.', '/'), path }, 'service import written');
  }
  for (const path of deleted) log.info({ path }, 'file deleted');
  for (const problem of after.problems) {
    if (!before?.problems.includes(problem)) log.warn({ problem }, 'input not usable yet');
  }
}

/** Runs until the signal aborts (or one step with `once`); returns the last controller status. */
export async function runController(config: ControllerConfig, options: RunOptions = {}): Promise<ControllerStatus | undefined> {
  const log = options.log ?? createLogger('controller');
  const files = diskRunDir(config.runDir);
  const store = new FileStore<IpamPlanes>(join(config.runDir, runDirPaths.ipam(config.clusterId)), ipamStateCodec);
  mkdirSync(dirname(store.path), { recursive: true });
  const lock = await store.lock();
  try {
    let ipam = await store.load();
    let previous = lastGateway(files, config);
    const startedAt = Date.now();
    let last: ReconcileResult | undefined;
    let lastError: string | undefined;
    let sightings = new Map<string, Sighting>();
    log.info(
      { clusterId: config.clusterId, runDir: config.runDir, peers: config.peers, nodes: config.nodes.map((n) => n.name) },
      'controller started',
    );
    while (!options.signal?.aborted) {
      const started = performance.now();
      const seconds = () => (performance.now() - started) / 1000;
      const gatewayBefore = previous?.gateway;
      try {
        const now = Date.now();
        const exchange = readExchange(files, config.clusterId);
        const stamped = readHeartbeats(
          files,
          config.clusterId,
          config.nodes.map((n) => n.name),
        );
        sightings = observeRenewals(sightings, new Map([...stamped].map(([node, h]) => [node, h.time])), now);
        const seen = heartbeatsAsSeen(stamped, sightings, now);
        exchange.problems.push(...seen.problems);
        const result = reconcile({ config, ipam, exchange, heartbeats: seen.heartbeats, previous, now, startedAt });
        if (result.ipam !== ipam) await store.save(result.ipam);
        ipam = result.ipam;
        previous = result.election;
        const wanted = runDirFiles(result, config.clusterId, exchange.written);
        const { written, deleted } = syncFiles(files, wanted.files, wanted.deletes);
        // Multi-cluster services, over the peerings this round established (docs/services.md). Their own
        // round: what fails in it (a file it cannot write) is retried next round and fails no peering.
        let services: Pick<ServicesRound, 'written' | 'deleted' | 'problems'>;
        try {
          services = reconcileServices(
            files,
            config.clusterId,
            result.ipam,
            result.tunnels.map((t) => t.clusterId),
            new Date(now).toISOString(),
          );
        } catch (err) {
          services = {
            written: [],
            deleted: [],
            problems: [`services: ${err instanceof Error ? err.message : String(err)}; retried next round`],
          };
        }
        const round = { ...result, problems: [...result.problems, ...services.problems] };
        logChanges(log, last, round, [...written, ...services.written], [...deleted, ...services.deleted]);
        options.metrics?.reconciled(result, gatewayBefore, seconds());
        last = round;
        lastError = undefined;
      } catch (err) {
        // Our configuration against our own state: retrying cannot help, the operator must act.
        if (err instanceof StateError || err instanceof InputError || options.once) throw err;
        const text = err instanceof Error ? err.message : String(err);
        options.metrics?.failed(seconds(), text);
        if (text !== lastError) log.error({ err }, 'reconcile failed; retrying');
        lastError = text;
      }
      if (options.once) break;
      await sleep(config.interval * 1000, options.signal);
    }
    log.info({ clusterId: config.clusterId }, 'controller stopped');
    return last?.status;
  } finally {
    await lock.release();
  }
}

/** Runs until SIGTERM or SIGINT, then finishes the current step, releases the lock and returns. */
export async function runUntilSignalled(config: ControllerConfig, metrics?: ControllerMetrics): Promise<void> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  try {
    await runController(config, { signal: stop.signal, ...(metrics ? { metrics } : {}) });
  } finally {
    process.removeListener('SIGTERM', onSignal);
    process.removeListener('SIGINT', onSignal);
  }
}

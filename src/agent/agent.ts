/**
 * The node agent (docs/lab.md): probes the kernel once, loads the datapath, then keeps the node in step
 * with its NodeDataplane: on every change its spec source reports (a file watch, an informer) and every
 * interval anyway (in case a change notice is lost, and to repair anything changed by hand). A spec that
 * is missing, half-written or invalid is never applied: the last good spec stays in force.
 * SIGTERM/SIGINT leave the datapath in place (maps pinned, programs attached) for the next agent, but
 * when the release is being uninstalled (its DaemonSet deleted): then no agent comes next, and the stop
 * takes everything off the node as `strait agent --cleanup` does.
 */
import type { TcMode } from '../native';
import { native } from '../native/binding';
import { InputError, StateError } from '../errors';
import type { Logger } from '../log';
import type { NodeDataplaneSpec } from '../nodespec/spec';
import type { Dataplane } from '../api/dataplane';
import { type ProbeReport, chooseDataplane, describeMissing, encryptionRequirements, ipFamilies, missingFor } from '../probe/features';
import type { FamiliesUnavailable } from '../nodespec/kernel-families';
import { probeKernel } from '../probe/probe';
import { type CachedProbe, cachedProbe } from '../probe/probe-cache';
import type { NodeDataplane } from '../dataplane/port';
import { uninstallPlugin } from '../cni/install';
import { cleanupNodeDataplanes, openDataplane } from '../dataplane/open';
import { type NodeDataplaneStatus, canonicalSpecText, readNodeDataplane, specDigest } from '../api/node-dataplane';
import { type Condition, setConditions } from '../api/conditions';
import { agentConditions } from './conditions';
import { openControlPlane } from './control-plane';
import type { AgentPorts, ControlPlaneOptions, SpecSource } from './control-plane-port';
import type { MetricsListen } from '../metrics/listen';
import type { AgentMetrics, AgentMetricsSource, AgentState } from '../metrics/agent-metrics';
import { type MetricsServer, startMetricsServer } from '../metrics/server';
import type { DetectionSettings } from '../liveness/detection';
import { Prober } from '../liveness/prober';
import { netnsPath } from '../kernel/netns';
import { type LocalGateway, localGateway } from './local-gateway';

export type DataplaneRequest = 'auto' | Dataplane;

export interface AgentOptions {
  /** Where the spec comes from and the status goes: files, or the API server. */
  controlPlane: ControlPlaneOptions;
  pinRoot: string;
  podInterfaces: RegExp;
  dataplane: DataplaneRequest;
  attachMode: TcMode;
  intervalMs: number;
  /** How often the whole kernel state is read and repaired even when no change event said so (the maps: only then). */
  resyncMs: number;
  /** The probes of the gateway candidates (src/liveness); none: the node follows the published gateway only. */
  liveness?: DetectionSettings;
  /** The node's namespace by name (/run/netns/NAME); default: the agent's own, as in the lab. */
  netns?: string;
  /** A directory with one file per encrypted peering's cluster id, holding its secret (base64, 0600). */
  ipsecSecrets?: string;
  /** Where to serve /metrics, /healthz and /readyz; none: no server. */
  metrics?: MetricsListen;
  /** Where the probe's report is kept for the rest of the boot (probe-cache.ts); none: probe at every start. */
  probeCache?: string;
  /** Where strait-ipam was installed on the node (install.ts), to take off with the datapath on uninstall. */
  poolIpamPlugin?: { cniBinDir: string; runtimeDir: string };
}

/** The kernel refused this process (a capability missing) rather than lacking the feature. */
const refused = (reason: string | undefined) => reason !== undefined && /Operation not permitted|\bEPERM\b/.test(reason);

/** Pure: the dataplane to run, or why none can run on this kernel (or with this process's privileges). */
export function selectDataplane(requested: DataplaneRequest, report: ProbeReport): Dataplane {
  const lacks = (dataplane: Dataplane) => describeMissing(missingFor(dataplane, report), report).join(', ');
  const allRefused = (dataplanes: Dataplane[]) => dataplanes.flatMap((d) => missingFor(d, report)).every((f) => refused(report.reasons[f]));
  const notPermitted = 'this process is not permitted what';
  const privileges = '(a capability missing? docs/helm.md, "The agent\'s privileges")';
  const chosen = requested === 'auto' ? chooseDataplane(report) : requested;
  if (missingFor(chosen, report).length === 0) return chosen;
  if (requested !== 'auto') {
    const what = `the ${chosen === 'ebpf' ? 'eBPF dataplane' : 'kernel fallback'} needs`;
    throw new InputError(
      '--dataplane',
      requested,
      allRefused([chosen]) ? `${notPermitted} ${what} ${privileges}: ${lacks(chosen)}` : `this kernel lacks what ${what}: ${lacks(chosen)}`,
    );
  }
  if (allRefused(['ebpf', 'kernel']))
    throw new StateError(
      `${notPermitted} either dataplane needs ${privileges}: eBPF: ${lacks('ebpf')}; the kernel fallback: ${lacks('kernel')}`,
    );
  throw new StateError(`this kernel can run neither dataplane: eBPF lacks ${lacks('ebpf')}; the kernel fallback lacks ${lacks('kernel')}`);
}

/** Pure: per IP family the chosen dataplane cannot carry on this kernel, what it lacks (with the kernel's reasons). */
export function familiesUnavailable(kind: Dataplane, report: ProbeReport): FamiliesUnavailable {
  return Object.fromEntries(
    ipFamilies.flatMap((family) => {
      const lacks = describeMissing(missingFor(kind, report, family), report);
      return lacks.length > 0 ? [[family, lacks.join(', ')]] : [];
    }),
  );
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * A spec that passed every check: `digest` names it whole (the metrics' strait_agent_applied_spec_info),
 * `acknowledged` the part the status's appliedSpec names (SpecSource.ownPartText; the whole spec from a
 * file), and `generation` the document's metadata.generation where there is one.
 */
interface GoodSpec {
  spec: NodeDataplaneSpec;
  digest: string;
  acknowledged: string;
  generation?: number;
}

/** The reconcile state of one agent process; `tick` is one reconcile, run from the timer and the source's change notices. */
export class Agent {
  /** The version of the document last read (undefined: none there), so an unchanged one is not re-parsed. */
  private lastVersion: string | undefined | null = null;
  /** metadata.generation of the document last read, when its source has one. */
  private newestGeneration?: number;
  private good?: GoodSpec;
  /** The digest of the spec last applied, to log a new one once. */
  private appliedDigest?: string;
  /** The `acknowledged` digest last applied: a new one counts a new generation. */
  private acknowledgedDigest?: string;
  /** The spec last applied in full, its digests and generation. */
  private applied?: GoodSpec;
  private conditions: Condition[] = [];
  private generation = 0;
  private ready = false;
  private lastError?: string;
  private lastConflicts = '';
  private lastReadError?: string;
  /** Why the newest spec is not the one in force. */
  private rejection?: string;
  private lastBeatError?: string;
  /** A tick since memory was last released parsed a document or read the node's whole state. */
  private heapGrown = false;

  /**
   * `releaseMemory`: hands back to the kernel the heap that parsing a spec, or reading the node's whole
   * state, grew (V8 keeps it otherwise: an idle agent at 100,000 NatMappings held 170 MiB instead of 80,
   * and 115 after each resync); called at the first tick that did neither, so a burst of changes costs one.
   */
  constructor(
    private readonly ports: AgentPorts,
    private readonly dataplane: NodeDataplane,
    private readonly log: Logger,
    private readonly metrics?: AgentMetrics,
    private readonly releaseMemory: () => void = () => {},
    /** The gateway this node's probes choose; none: the published one. */
    private readonly gateway?: LocalGateway,
  ) {}

  tick(): void {
    let grown = this.readSpec();
    if (this.good) {
      const started = performance.now();
      grown = this.apply(this.good) || grown;
      this.metrics?.reconciled((performance.now() - started) / 1000, !this.ready);
    } else {
      // No spec yet: up and loaded, nothing failing; specGeneration 0 says nothing is applied.
      this.ready = true;
    }
    this.beat(this.ready);
    if (grown) this.heapGrown = true;
    else if (this.heapGrown) {
      this.heapGrown = false;
      this.releaseMemory();
    }
  }

  /**
   * Why /readyz says not ready: no spec applied yet, or the last apply failed; undefined when a spec is
   * in force. Stricter than the heartbeat's `ready`, which is true while there is no spec at all.
   */
  get notReady(): string | undefined {
    if (this.lastError !== undefined) return `applying the spec failed: ${this.lastError}`;
    if (this.applied === undefined) return `no spec applied yet${this.rejection ? ` (${this.rejection})` : ''}`;
    return undefined;
  }

  /** What a metrics scrape reads. */
  metricsState(): AgentState {
    return {
      dataplane: this.dataplane.kind,
      specGeneration: this.generation,
      ...(this.applied === undefined ? {} : { applied: this.applied.spec, appliedSpec: this.applied.digest }),
      ...(this.dataplane.counters === undefined ? {} : { counters: () => this.dataplane.counters!() }),
      ...(this.gateway === undefined ? {} : { gateway: this.gateway.metricsState() }),
    };
  }

  /** Whether a new document was parsed (whether or not its spec was good). */
  private readSpec(): boolean {
    const { source } = this.ports;
    const keeping = this.good ? 'last good spec' : 'nothing applied yet';
    let document: ReturnType<SpecSource['read']>;
    try {
      document = source.read();
    } catch (err) {
      // The last good spec stays applied, so the node stays ready; logged once per distinct error.
      if (message(err) !== this.lastReadError) this.log.error({ ...source.where, error: message(err), keeping }, 'cannot read the spec');
      this.lastReadError = message(err);
      return false;
    }
    this.lastReadError = undefined;
    if (document?.version === this.lastVersion) return false;
    const first = this.lastVersion === null;
    this.lastVersion = document?.version;
    this.newestGeneration = document?.generation;
    if (document === undefined) {
      this.log.warn({ ...source.where, keeping }, 'no spec');
      return false;
    }
    try {
      const { spec, status } = readNodeDataplane(document.parse());
      // A restarted agent carries on the conditions it finds, so their transition times stay true.
      if (first && status?.conditions) this.conditions = status.conditions;
      const { nodeName } = this.ports;
      if (nodeName !== undefined && spec.node.name !== nodeName)
        throw new InputError('spec.node.name', spec.node.name, `this agent runs node ${nodeName} (--node)`);
      // Dry run of the dataplane's own checks (IPv4 only...), so a spec it cannot take changes nothing.
      this.dataplane.validate(spec);
      // Its digest, not its canonical text: megabytes at 100,000 NatMappings, held as long as the spec.
      const digest = specDigest(canonicalSpecText(spec));
      this.good = {
        spec,
        digest,
        acknowledged: source.ownPartText === undefined ? digest : specDigest(source.ownPartText(spec)),
        ...(document.generation === undefined ? {} : { generation: document.generation }),
      };
      this.rejection = undefined;
    } catch (err) {
      this.rejection = `spec rejected: ${message(err)}`;
      const detail = err instanceof InputError ? { field: err.field, value: err.value } : {};
      this.log.error({ ...source.where, error: message(err), ...detail, keeping }, 'spec rejected');
    }
    return true;
  }

  /** Whether the dataplane read the node's whole state. */
  private apply(good: GoodSpec): boolean {
    const { spec, digest, acknowledged } = good;
    try {
      const effective = this.gateway?.effective(spec) ?? spec;
      const { changes, conflicts: routeConflicts, readAll } = this.dataplane.apply(effective);
      if (digest !== this.appliedDigest) {
        if (acknowledged !== this.acknowledgedDigest) this.generation += 1;
        this.appliedDigest = digest;
        this.acknowledgedDigest = acknowledged;
        this.log.info(
          {
            specGeneration: this.generation,
            spec: digest,
            role: effective.node.role,
            peers: spec.peers.length,
            natMappings: spec.natMappings.length,
            nodes: spec.nodes.length,
            changes: changes ?? {},
          },
          'spec applied',
        );
      } else if (changes) {
        this.log.info(
          { specGeneration: this.generation, changes },
          'node changed since the last apply (a new pod interface, or a change by hand); reconciled',
        );
      }
      const conflicts = routeConflicts.join(',');
      if (conflicts !== this.lastConflicts && conflicts !== '')
        this.log.warn(
          { prefixes: routeConflicts },
          'remote prefixes already routed by someone else; their routes are left alone (rp_filter may drop peer traffic)',
        );
      this.lastConflicts = conflicts;
      if (this.lastError !== undefined) this.log.info({ after: this.lastError }, 'reconcile recovered');
      this.lastError = undefined;
      this.ready = true;
      this.applied = good;
      return readAll === true;
    } catch (err) {
      // Not ready until an apply succeeds again; each distinct error is logged once, not every tick.
      this.ready = false;
      if (message(err) !== this.lastError) this.log.error({ error: message(err) }, 'applying the spec failed');
      this.lastError = message(err);
      return false;
    }
  }

  /**
   * The last heartbeat of an agent stopping for a restart: as Ready as the agent was (its datapath stays),
   * valid for `seconds`, so the controller does not fail the gateway over while the next agent starts.
   * A node whose agent does not come back stops being Ready when that runs out.
   */
  beatStopping(seconds: number): void {
    if (this.ready) this.beat(true, seconds);
  }

  beat(ready: boolean, validFor?: number): void {
    const { sink } = this.ports;
    if (sink === undefined) return;
    const time = new Date().toISOString();
    const status: NodeDataplaneStatus = {
      ready,
      time,
      dataplane: this.dataplane.kind,
      specGeneration: this.generation,
      ...(validFor === undefined ? {} : { validFor }),
    };
    const error = this.rejection ?? this.lastError;
    if (error !== undefined) status.error = error;
    if (this.applied !== undefined) status.appliedSpec = this.applied.acknowledged;
    const probes = this.gateway?.report() ?? [];
    if (probes.length > 0) status.gatewayProbes = probes;
    this.conditions = setConditions(
      this.conditions,
      agentConditions({
        noSpec: this.lastVersion === undefined || this.lastVersion === null,
        ...(this.rejection === undefined ? {} : { rejection: this.rejection }),
        ...(this.lastError === undefined ? {} : { applyError: this.lastError }),
        ready,
        dataplane: this.dataplane.kind,
        ...(this.newestGeneration === undefined ? {} : { newestGeneration: this.newestGeneration }),
        ...(this.applied?.generation === undefined ? {} : { appliedGeneration: this.applied.generation }),
        ...(this.applied === undefined ? {} : { appliedSpec: this.applied.acknowledged }),
      }),
      time,
    );
    status.conditions = this.conditions;
    try {
      sink.write(status);
      this.lastBeatError = undefined;
    } catch (err) {
      if (message(err) !== this.lastBeatError) this.log.error({ ...sink.where, error: message(err) }, 'cannot write the status');
      this.lastBeatError = message(err);
    }
  }
}

/**
 * How long a stopping agent's last heartbeat keeps its node Ready (standalone): a start with the probe
 * cached takes 0.2-0.3 s (BENCHMARKS.md, "Agent start"), 2.5 s under a loaded machine's full test suite
 * when every start probed; 5 s covers a restart with room, and delays the failover of a gateway whose
 * agent is stopped for good by as much.
 */
const restartGraceSeconds = 5;

/** Resolves on the first SIGTERM or SIGINT (handlers installed at once, so a signal during startup counts). */
function stopSignal(log: Logger): { stopped: Promise<string>; isStopped: () => boolean } {
  let signal: string | undefined;
  let resolve: (s: string) => void = () => {};
  const stopped = new Promise<string>((r) => (resolve = r));
  const onSignal = (s: NodeJS.Signals) => {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    log.info({ signal: s }, 'stopping');
    signal = s;
    resolve(s);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return { stopped, isStopped: () => signal !== undefined };
}

/** The metrics and health server; prom-client is loaded only by a process that serves it. */
async function serveMetrics(
  listen: MetricsListen,
  source: AgentMetricsSource,
  log: Logger,
): Promise<{ metrics: AgentMetrics; server: MetricsServer }> {
  const { AgentMetrics } = await import('../metrics/agent-metrics');
  const metrics = new AgentMetrics(source);
  return { metrics, server: await startMetricsServer(listen, metrics.registry, () => source.notReady(), log) };
}

/** The kernel's features: from the cache when it holds this boot's report, else probed (and kept). */
async function probeOnce(options: AgentOptions): Promise<CachedProbe> {
  // In the node's namespace, the one the agent may change (making another needs CAP_SYS_ADMIN).
  if (options.probeCache === undefined) return { report: await probeKernel(options.netns), source: 'probed' };
  return cachedProbe(options.probeCache, options.netns);
}

/** Both results, or the first error once both have settled; `release` undoes the first when only the second failed. */
async function openBoth<A, B>(a: Promise<A>, b: Promise<B>, release: (a: A) => Promise<void>): Promise<[A, B]> {
  const [first, second] = await Promise.allSettled([a, b]);
  if (first.status === 'fulfilled' && second.status === 'fulfilled') return [first.value, second.value];
  if (first.status === 'fulfilled') await release(first.value);
  throw first.status === 'rejected' ? first.reason : (second as PromiseRejectedResult).reason;
}

/**
 * Runs the agent until SIGTERM/SIGINT. Throws (before changing anything) when no dataplane can run, the
 * control plane cannot be reached as configured (a bad kubeconfig) or the metrics port is taken.
 */
export async function runAgent(options: AgentOptions, log: Logger): Promise<void> {
  const stop = stopSignal(log);
  // What a scrape sees: no agent while the datapath loads, and none once it is being released.
  let running: Agent | undefined;
  let phase = 'starting: the datapath is not loaded yet';
  const served =
    options.metrics === undefined
      ? undefined
      : await serveMetrics(
          options.metrics,
          { notReady: () => (running ? running.notReady : phase), state: () => running?.metricsState() },
          log,
        );
  try {
    // Neither changes the node: the control plane is opened (a bad kubeconfig throws) while the kernel is
    // probed, or its report read from the cache.
    const [control, probe] = await openBoth(openControlPlane(options.controlPlane, log), probeOnce(options), (c) => c.close());
    let dataplane: NodeDataplane;
    let prober: Prober | undefined;
    let sourceReady: Promise<unknown>;
    let uninstalled = false;
    try {
      const { report } = probe;
      const kind = selectDataplane(options.dataplane, report);
      const unavailable = describeMissing(encryptionRequirements, report).join(', ');
      // The spec is read (the API server's first list) while the datapath loads.
      sourceReady = control.ports.source.ready();
      // Awaited once the datapath is loaded; until then a rejection must not count as unhandled.
      sourceReady.catch(() => {});
      dataplane = await openDataplane(kind, {
        ...options,
        log,
        livenessResponder: missingFor('ebpf', report).length === 0,
        ...(unavailable ? { ipsecUnavailable: unavailable } : {}),
        familiesUnavailable: familiesUnavailable(kind, report),
      });
      log.info(
        {
          dataplane: kind,
          pinRoot: options.pinRoot,
          ...control.where,
          intervalMs: options.intervalMs,
          resyncMs: options.resyncMs,
          tcx: report.features.tcx,
          probe: probe.source,
          ipsec: unavailable ? `unavailable: ${unavailable}` : 'available',
          ipsecSecrets: options.ipsecSecrets ?? null,
        },
        'agent started',
      );
      if (probe.writeError !== undefined)
        log.warn({ probeCache: options.probeCache, error: probe.writeError }, 'cannot keep the probe report; the next start probes again');
    } catch (err) {
      await control.close();
      throw err;
    }
    try {
      if (dataplane.replacedMaps)
        log.warn(
          { maps: dataplane.replacedMaps, carriedState: dataplane.carriedState ?? [] },
          "pinned maps of another build had a layout this one cannot use: replaced, their state carried over, and refilled by the first apply before this build's programs replace the running ones",
        );
      // Beside the datapath, not behind it: a pool IPAM still reading the API server delays no reconcile.
      await control.serve();
      const { source } = control.ports;
      // A burst of notices for one write (create, write, rename) becomes one reconcile.
      let pending: NodeJS.Timeout | undefined;
      const onChange = () => {
        pending ??= setTimeout(() => {
          pending = undefined;
          agent.tick();
        }, 10);
      };
      // A verdict that changes reconciles at once: that is the failover.
      prober =
        options.liveness && new Prober({ ...options.liveness, ...(options.netns ? { netns: netnsPath(options.netns) } : {}), onChange });
      const agent = new Agent(control.ports, dataplane, log, served?.metrics, () => native().releaseMemory(), localGateway(prober, log));
      running = agent;
      source.watch(onChange);
      // Until the source can answer (the informer's first list) nothing is applied nor reported: the
      // datapath a previous agent left stays as it is.
      await Promise.race([sourceReady, stop.stopped]);
      let timer: NodeJS.Timeout | undefined;
      if (!stop.isStopped()) {
        agent.tick();
        prober?.start();
        control.start();
        timer = setInterval(() => {
          source.watch(onChange);
          agent.tick();
        }, options.intervalMs);
        await stop.stopped;
      }
      // No last "not ready" heartbeat: a restart (an upgrade) must not fail the gateway over. Standalone,
      // where the heartbeat is the node's readiness, the last one says how long a restart may take; the
      // node stops being Ready when it ages out, which is what a stopped agent means. (On Kubernetes the
      // Node's Ready condition and the datapath's answers decide, and neither stops with the agent:
      // docs/kubernetes.md.)
      clearInterval(timer);
      clearTimeout(pending);
      prober?.close();
      prober = undefined;
      if (options.controlPlane.kind === 'files') agent.beatStopping(restartGraceSeconds);
      uninstalled = control.uninstalled();
      await control.close();
    } finally {
      prober?.close();
      running = undefined;
      phase = 'stopping';
      dataplane.close();
    }
    if (uninstalled) {
      const removed = cleanupNodeDataplanes(options.pinRoot, options.netns);
      log.info({ removed }, 'the release is uninstalled: the datapath is taken off the node');
      if (options.poolIpamPlugin) {
        const plugin = uninstallPlugin(options.poolIpamPlugin);
        if (plugin.foreign) log.warn({ plugin: plugin.foreign }, 'a strait-ipam that is not ours is left as it is');
        log.info(
          { ...plugin },
          "the release is uninstalled: strait-ipam's runtime is removed, its launcher lets the pods that used it be deleted",
        );
      }
    } else {
      log.info('stopped; the datapath stays in place for the next agent');
    }
  } finally {
    await served?.server.close();
  }
}

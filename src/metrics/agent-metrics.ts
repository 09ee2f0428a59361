/**
 * The agent's metrics (docs/metrics.md), `strait_agent_*`. The gauges and the datapath's counters are
 * read when Prometheus scrapes (collect callbacks), so a scrape shows the state of that moment and the
 * reconcile loop does no extra work; only the reconcile histogram and error counter are fed by the loop.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { type DatapathCounters, counterFamilies } from '../dataplane/ebpf/inspect';
import type { NodeDataplaneSpec } from '../nodespec/spec';
import type { Dataplane } from '../api/dataplane';
import type { LocalGatewayState } from '../agent/local-gateway';
import { reconcileBuckets } from './buckets';

/** What the scrape reads from the running agent. */
export interface AgentState {
  dataplane: Dataplane;
  /** Distinct specs this process applied (the status's specGeneration). */
  specGeneration: number;
  /** The spec in force; its peers name the peer ids of the counters. */
  applied?: NodeDataplaneSpec;
  /** The digest of the whole spec in force (node list and gateways included). */
  appliedSpec?: string;
  /** The datapath's own counters; absent on the kernel fallback, which has none. */
  counters?: () => DatapathCounters;
  /** The local failover's probes and choice; absent with --probe-interval 0. */
  gateway?: LocalGatewayState;
}

export interface AgentMetricsSource {
  /** Why the agent is not ready (what /readyz says), undefined when it is. */
  notReady(): string | undefined;
  /** Undefined until the datapath is loaded, and once it is being released. */
  state(): AgentState | undefined;
}

export class AgentMetrics {
  readonly registry = new Registry();
  private readonly reconcileDuration: Histogram;
  private readonly reconcileErrors: Counter;

  constructor(source: AgentMetricsSource) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    /**
     * Each peer's counters as series of a counter per family (ipv4, ipv6) and direction, tx (translated
     * toward the peer) and rx (from it).
     */
    const perPeer = (metric: Counter<'peer' | 'family' | 'direction'>, unit: 'Packets' | 'Bytes') => {
      metric.reset();
      const state = source.state();
      const names = new Map(state?.applied?.peers.map((p) => [p.peerId, p.clusterId]));
      for (const { peerId, counters: c } of state?.counters?.().peers ?? []) {
        // A peer the spec in force does not name (a previous agent's, before the first apply deletes it).
        const peer = names.get(peerId);
        if (peer === undefined) continue;
        for (const family of counterFamilies) {
          metric.inc({ peer, family, direction: 'tx' }, c[family][`tx${unit}`]);
          metric.inc({ peer, family, direction: 'rx' }, c[family][`rx${unit}`]);
        }
      }
    };

    new Gauge({
      name: 'strait_agent_ready',
      help: '1 when the datapath is loaded and the last apply of the spec succeeded (what /readyz says), else 0',
      registers,
      collect() {
        this.set(source.notReady() === undefined ? 1 : 0);
      },
    });
    new Gauge({
      name: 'strait_agent_dataplane',
      help: 'The dataplane this agent runs, as a label: 1 for the one in use (ebpf or kernel)',
      labelNames: ['dataplane'],
      registers,
      collect() {
        this.reset();
        const state = source.state();
        if (state !== undefined) this.set({ dataplane: state.dataplane }, 1);
      },
    });
    new Gauge({
      name: 'strait_agent_spec_generation',
      help: 'Distinct specs this process applied (the status specGeneration; 0: none yet)',
      registers,
      collect() {
        this.set(source.state()?.specGeneration ?? 0);
      },
    });
    new Gauge({
      name: 'strait_agent_applied_spec_info',
      help: "1, labelled with the digest of the whole spec in force (its node list and gateways included; the status's appliedSpec names on Kubernetes only the NodeDataplane's own part)",
      labelNames: ['spec'],
      registers,
      collect() {
        this.reset();
        const spec = source.state()?.appliedSpec;
        if (spec !== undefined) this.set({ spec }, 1);
      },
    });
    new Gauge({
      name: 'strait_agent_nat_mappings',
      help: 'NatMappings programmed: those of the spec in force (0 until a spec is applied)',
      registers,
      collect() {
        this.set(source.state()?.applied?.natMappings.length ?? 0);
      },
    });
    new Counter({
      name: 'strait_agent_peer_packets_total',
      help: 'Packets translated per peer cluster and IP family: tx toward the peer, rx from it (eBPF dataplane only)',
      labelNames: ['peer', 'family', 'direction'],
      registers,
      collect() {
        perPeer(this, 'Packets');
      },
    });
    new Counter({
      name: 'strait_agent_peer_bytes_total',
      help: 'Bytes (whole frames) translated per peer cluster and IP family: tx toward the peer, rx from it (eBPF dataplane only)',
      labelNames: ['peer', 'family', 'direction'],
      registers,
      collect() {
        perPeer(this, 'Bytes');
      },
    });
    new Counter({
      name: 'strait_agent_dropped_packets_total',
      help: 'Packets the eBPF datapath dropped, per reason (docs/datapath.md; eBPF dataplane only)',
      labelNames: ['reason'],
      registers,
      collect() {
        this.reset();
        for (const [reason, packets] of Object.entries(source.state()?.counters?.().drops ?? {})) this.inc({ reason }, packets);
      },
    });
    new Gauge({
      name: 'strait_agent_gateway_probe_up',
      help: 'Per gateway this node probes (a candidate by name, a peer gateway as peer:<address>): 1 answering, 0 down; no series while never heard (docs/liveness.md)',
      labelNames: ['target'],
      registers,
      collect() {
        this.reset();
        for (const [target, verdict] of source.state()?.gateway?.verdicts ?? [])
          if (verdict !== 'unknown') this.set({ target }, verdict === 'up' ? 1 : 0);
      },
    });
    new Gauge({
      name: 'strait_agent_gateway_overridden',
      help: "1 while this node's probes make it send through gateways other than the published ones (local failover), else 0",
      registers,
      collect() {
        this.set(source.state()?.gateway?.overriding ? 1 : 0);
      },
    });
    new Counter({
      name: 'strait_agent_gateway_switches_total',
      help: 'Changes of the gateways this node sends through (its own probes, or a new published order)',
      registers,
      collect() {
        this.reset();
        this.inc(source.state()?.gateway?.switches ?? 0);
      },
    });
    this.reconcileDuration = new Histogram({
      name: 'strait_agent_reconcile_duration_seconds',
      help: 'Time to apply the spec once (a reconcile: every change and every --interval)',
      buckets: reconcileBuckets,
      registers,
    });
    this.reconcileErrors = new Counter({
      name: 'strait_agent_reconcile_errors_total',
      help: 'Reconciles whose apply failed (the agent is not ready until one succeeds)',
      registers,
    });
  }

  /** One apply of the spec, how long it took and whether it failed. */
  reconciled(seconds: number, failed: boolean): void {
    this.reconcileDuration.observe(seconds);
    if (failed) this.reconcileErrors.inc();
  }
}

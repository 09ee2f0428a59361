/**
 * The controller's metrics (docs/metrics.md), `strait_controller_*`, both standalone and on Kubernetes.
 * The peer and IPAM gauges show the outcome of this process's last reconcile, so they are registered
 * with its first one: on Kubernetes only the leader reconciles, and a standby shows none of them rather
 * than zeros it does not know (strait_controller_leader says which replica to read).
 *
 * Readiness (/readyz) follows the same events: standalone, ready once a reconcile succeeded; on
 * Kubernetes, a leader once it reconciled in its term (its caches are filled first), a standby once it
 * has seen a leader on the Lease.
 */
import { planesOf } from '../network-ipam/planes';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { peerStates } from '../api/peer-states';
import type { ReconcileResult } from '../controller/reconcile';
import { unusableOffsets } from '../network-ipam/external-addresses';
import { cidrSize, formatCidr } from '../net/cidr';
import { reconcileBuckets } from './buckets';

/** A gauge with its name, which prom-client's types do not expose but its registry is keyed by. */
const gauge = <T extends string>(name: string, help: string, labelNames: readonly T[] = []) => ({
  name,
  gauge: new Gauge<T>({ name, help, labelNames, registers: [] }),
});

export class ControllerMetrics {
  readonly registry = new Registry();
  private readonly peers = gauge('strait_controller_peers', 'Configured peers per peering state (waiting-for-peer, remapped, ready)', [
    'state',
  ]);
  private readonly peerNetworks = gauge(
    'strait_controller_ipam_peer_networks',
    "Peers' networks placed in this cluster's view by the IPAM, per IP family (ipv4, ipv6), kind (pod, external) and whether they were remapped (they overlapped a network in use)",
    ['family', 'kind', 'remapped'],
  );
  private readonly externalInUse = gauge(
    'strait_controller_ipam_external_addresses_in_use',
    'ExternalCIDR addresses given to reflected endpoints (NatMappings), per IP family',
    ['family'],
  );
  private readonly externalUsable = gauge(
    'strait_controller_ipam_external_addresses_usable',
    'ExternalCIDR addresses that can be given out at most (network, broadcast and transit addresses left out), per IP family; at most 2^53',
    ['family'],
  );
  private readonly peerApiUp = gauge(
    'strait_controller_peer_api_up',
    "1 while a peer's API server takes this cluster's credentials (the leader checks each peer every 30 s and at every failed write), else 0",
    ['peer'],
  );
  private readonly outcome = [this.peers, this.peerNetworks, this.externalInUse, this.externalUsable, this.peerApiUp];
  private readonly gatewayChanges: Counter;
  private readonly leader: Gauge | undefined;
  private readonly reconcileDuration: Histogram;
  private readonly reconcileErrors: Counter;
  private isLeading = false;
  private seenLeader = false;
  /** Since this process started, or on Kubernetes since it started leading. */
  private reconciledOnce = false;
  private lastError: string | undefined;

  /** `kubernetes`: replicas elect a leader, and strait_controller_leader says which one this is. */
  constructor(private readonly mode: 'standalone' | 'kubernetes') {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.gatewayChanges = new Counter({
      name: 'strait_controller_gateway_changes_total',
      help: 'Times this process moved the gateway to another node (a first election is no change)',
      registers,
    });
    this.leader =
      mode === 'kubernetes'
        ? new Gauge({
            name: 'strait_controller_leader',
            help: '1 while this replica holds the controller Lease (the leader), else 0',
            registers,
          })
        : undefined;
    this.reconcileDuration = new Histogram({
      name: 'strait_controller_reconcile_duration_seconds',
      help: 'Time of one reconcile, its writes included',
      buckets: reconcileBuckets,
      registers,
    });
    this.reconcileErrors = new Counter({
      name: 'strait_controller_reconcile_errors_total',
      help: 'Reconciles that failed (each is retried)',
      registers,
    });
  }

  /** A reconcile that succeeded; `previousGateway`: the gateway it started from (a move is counted). */
  reconciled(result: ReconcileResult, previousGateway: string | undefined, seconds: number): void {
    this.reconcileDuration.observe(seconds);
    this.reconciledOnce = true;
    this.lastError = undefined;
    if (previousGateway !== undefined && previousGateway !== result.election.gateway) this.gatewayChanges.inc();
    for (const { name, gauge } of this.outcome) {
      if (this.registry.getSingleMetric(name) === undefined) this.registry.registerMetric(gauge);
    }
    for (const state of peerStates) this.peers.gauge.set({ state }, result.status.peers.filter((p) => p.state === state).length);
    for (const [, plane] of planesOf(result.ipam)) {
      const family = `ipv${plane.home.podCIDR.family}`;
      const placed = { pod: { true: 0, false: 0 }, external: { true: 0, false: 0 } };
      for (const peer of plane.peers.values()) {
        placed.pod[`${formatCidr(peer.remotePodCIDR) !== formatCidr(peer.podCIDR)}`] += 1;
        placed.external[`${formatCidr(peer.remoteExternalCIDR) !== formatCidr(peer.externalCIDR)}`] += 1;
      }
      for (const kind of ['pod', 'external'] as const) {
        for (const remapped of ['true', 'false'] as const) this.peerNetworks.gauge.set({ family, kind, remapped }, placed[kind][remapped]);
      }
      const { external } = plane;
      this.externalInUse.gauge.set({ family }, external.byEndpoint.size);
      // An IPv6 ExternalCIDR may hold far more than a float counts exactly: capped, as the help says.
      const usable = cidrSize(external.cidr) - BigInt(unusableOffsets(external.cidr).length);
      this.externalUsable.gauge.set({ family }, Number(usable > 2n ** 53n ? 2n ** 53n : usable));
    }
  }

  /** What the leader's last check of a peer's API server found. */
  peerApi(peer: string, up: boolean): void {
    if (this.registry.getSingleMetric(this.peerApiUp.name) === undefined) this.registry.registerMetric(this.peerApiUp.gauge);
    this.peerApiUp.gauge.set({ peer }, up ? 1 : 0);
  }

  failed(seconds: number, error: string): void {
    this.reconcileDuration.observe(seconds);
    this.reconcileErrors.inc();
    this.lastError = error;
  }

  /** On Kubernetes: started or stopped leading. A standby reconciles nothing, so the gauges of its last term go. */
  leading(leading: boolean): void {
    this.leader?.set(leading ? 1 : 0);
    this.isLeading = leading;
    if (leading) {
      this.seenLeader = true;
      this.reconciledOnce = false;
      this.lastError = undefined;
      return;
    }
    for (const { name, gauge } of this.outcome) {
      this.registry.removeSingleMetric(name);
      gauge.reset();
    }
  }

  /** On Kubernetes: another replica was seen holding the Lease. */
  following(): void {
    this.seenLeader = true;
  }

  /** Why this process is not ready (one line, what /readyz says); undefined when it is. */
  notReady(): string | undefined {
    const failed = this.lastError === undefined ? '' : ` (the last failed: ${this.lastError})`;
    if (this.mode === 'standalone' || this.isLeading)
      return this.reconciledOnce ? undefined : `${this.isLeading ? 'leading: ' : ''}no reconcile done yet${failed}`;
    return this.seenLeader ? undefined : 'standby: no leader seen on the controller Lease yet';
  }
}

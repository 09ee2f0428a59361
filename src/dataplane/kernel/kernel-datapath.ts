/**
 * The kernel-route fallback of one node, the imperative shell around the pure plans: tunnel devices, FDB
 * and neighbour entries, table 18952 and its rules, IPsec xfrm states and policies, and the nftables
 * NAT, each reconciled (read, diff, apply) so a second apply changes nothing and anything removed by
 * hand comes back.
 */
import { reconcileFdb } from '../../kernel/fdb';
import { reconcileNeighbours } from '../../kernel/neighbours';
import { type Route, reconcileRoutes } from '../../kernel/routes';
import { reconcileRules } from '../../kernel/rules';
import { nodeTunnelMtus } from '../../kernel/underlay-mtu';
import { familiesOf } from '../../nodespec/families';
import type { NodeDataplaneSpec } from '../../nodespec/spec';
import { type DeviceChanges, reconcileTunnelDevices } from '../../kernel/tunnel-devices';
import { isFallbackDevice, overlayDevice, routingTable, tunnelDevice } from './identities';
import { type ApplyResult as IpsecApplyResult, IpsecError, applyIpsec, removeIpsec } from './ipsec-apply';
import type { Secret } from './ipsec-keys';
import { planIpsec } from './ipsec-plan';
import type { PeeringSecrets } from './ipsec-secrets';
import { applyNat, hasGatewayNat, removeNat } from './nat-apply';
import { forgetFlows } from '../../kernel/conntrack';
import { natRuleset } from './nat-ruleset';
import { type RoutePlan, planKernelRouting, remotePrefixesOf } from './routing-plan';
import { requireFallbackFamilies, requireIpv6TunnelMtus } from './carried-families';

export interface KernelApplyResult {
  devices: DeviceChanges;
  fdb: number;
  neighbours: number;
  routes: number;
  rules: number;
  natChanged: boolean;
  /** Tracked flows forgotten because the node's role changed (their NAT was decided under the old one). */
  flowsForgotten: number;
  ipsec: IpsecApplyResult;
  /** Encrypted peers whose traffic is blocked (no tunnel) because IPsec cannot be set up, and why. */
  blocked: string[];
  /** Entries the kernel refused, with its message. */
  failed: string[];
}

export interface IpsecSetup {
  secrets?: PeeringSecrets;
  /** Why this kernel cannot run IPsec peerings (`strait probe`), when it cannot. */
  unavailable?: string;
}

const count = (c: { added: unknown[]; changed: unknown[]; deleted: unknown[] }) => c.added.length + c.changed.length + c.deleted.length;

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

function kernelRoute(r: RoutePlan): Route {
  if (r.unreachable) return { dst: r.prefix, type: 'unreachable', ...(r.metric !== undefined ? { metric: r.metric } : {}) };
  return { dst: r.prefix, ...(r.device ? { dev: r.device } : {}), ...(r.via ? { via: r.via, onlink: true } : {}) };
}

const noIpsecChange: IpsecApplyResult = { added: 0, updated: 0, removed: 0 };

export class KernelDatapath {
  /** Whether xfrm may hold entries of ours: read at the first apply, then while a plan has any. */
  private xfrmMayHoldOurs = true;
  /** Whether the last apply made this node the gateway (undefined: none yet; the kernel's NAT says). */
  private gateway?: boolean;

  /** `netns`: the node's namespace by name; default: the agent's own. */
  constructor(
    private readonly netns?: string,
    private readonly ipsec: IpsecSetup = {},
  ) {}

  /** What apply reads besides the spec and the kernel (the secrets' files), as a string that changes with it. */
  inputsVersion(spec: NodeDataplaneSpec): string {
    const { secrets } = this.ipsec;
    if (!secrets || spec.node.role !== 'gateway') return '';
    return spec.peers
      .filter((p) => p.transport === 'ipsec')
      .map((p) => `${p.clusterId}=${secrets.version(p.clusterId)}`)
      .join(',');
  }

  /** The secrets of the encrypted peers this gateway can set up, and why the others are blocked. */
  private ipsecInputs(spec: NodeDataplaneSpec): { secrets: Map<string, Secret>; blocked: Map<string, string> } {
    const secrets = new Map<string, Secret>();
    const blocked = new Map<string, string>();
    if (spec.node.role !== 'gateway') return { secrets, blocked };
    for (const peer of spec.peers.filter((p) => p.transport === 'ipsec')) {
      if (this.ipsec.unavailable !== undefined)
        blocked.set(peer.clusterId, `this kernel cannot run IPsec peerings: ${this.ipsec.unavailable}`);
      else if (!this.ipsec.secrets) blocked.set(peer.clusterId, 'no source of IPsec secrets was given (strait agent --ipsec-secrets DIR)');
      else {
        try {
          secrets.set(peer.clusterId, this.ipsec.secrets.secretFor(peer.clusterId));
        } catch (err) {
          blocked.set(peer.clusterId, message(err));
        }
      }
    }
    return { secrets, blocked };
  }

  /** Reconciles xfrm; a refusal is reported, not thrown, so the rest of the node is still programmed. */
  private applyXfrm(spec: NodeDataplaneSpec, secrets: ReadonlyMap<string, Secret>): { result: IpsecApplyResult; failed: string[] } {
    const plan = planIpsec(spec, secrets);
    const options = this.netns === undefined ? {} : { netns: this.netns };
    if (plan.states.length + plan.policies.length === 0) {
      // Most nodes never encrypt: reading xfrm at every reconcile would cost two dumps for nothing.
      if (!this.xfrmMayHoldOurs) return { result: noIpsecChange, failed: [] };
      const removed = removeIpsec(options);
      this.xfrmMayHoldOurs = false;
      return { result: { ...noIpsecChange, removed }, failed: [] };
    }
    this.xfrmMayHoldOurs = true;
    try {
      return { result: applyIpsec(plan, options), failed: [] };
    } catch (err) {
      if (err instanceof IpsecError) return { result: noIpsecChange, failed: [err.message] };
      throw err;
    }
  }

  /** Refuses a spec this node cannot carry (InputError naming the field), with the tunnel MTUs it derives now; changes nothing. */
  validate(spec: NodeDataplaneSpec): void {
    requireFallbackFamilies(spec, nodeTunnelMtus(spec, this.netns));
  }

  apply(spec: NodeDataplaneSpec): KernelApplyResult {
    const { secrets, blocked } = this.ipsecInputs(spec);
    const mtus = nodeTunnelMtus(spec, this.netns);
    // Before anything changes, with the MTUs given below: the underlay device's may have changed since
    // the spec was validated, and a node made the gateway counts its public address's device too.
    requireIpv6TunnelMtus(spec, mtus);
    const plan = planKernelRouting(spec, new Set(blocked.keys()), mtus);
    // Devices before xfrm: an xfrm interface drops what no policy of its if_id matches, so an encrypted
    // peering is never in the clear, also while its states and policies are being installed.
    const devices = reconcileTunnelDevices(plan.devices, isFallbackDevice, this.netns);
    const ipsec = this.applyXfrm(spec, secrets);
    const fdb = reconcileFdb(
      plan.fdb.map(({ mac, dst }) => ({ mac, dst })),
      overlayDevice,
      this.netns,
    );
    const neighbourChanges = plan.devices.map((d) =>
      reconcileNeighbours(
        plan.neighbours.filter((n) => n.device === d.name).map((n) => ({ address: n.address, lladdr: n.mac })),
        d.name,
        this.netns,
      ),
    );
    const routes = reconcileRoutes(plan.routes.map(kernelRoute), { table: routingTable }, this.netns);
    const rules = reconcileRules(
      plan.rules.map((r) => ({
        ...(r.family ? { family: r.family } : {}),
        priority: r.priority,
        table: r.table,
        ...(r.to ? { to: r.to } : {}),
        ...(r.iif ? { iif: r.iif } : {}),
      })),
      this.netns,
    );
    const wasGateway = this.gateway ?? hasGatewayNat(this.netns);
    const nat = applyNat(natRuleset(spec, { peerInterface: tunnelDevice, overlay: overlayDevice }, mtus), this.netns);
    const failed = [fdb, ...neighbourChanges, routes, rules].flatMap((c) =>
      c.failed.map((f) => `${JSON.stringify(f.item)}: ${f.error.message}`),
    );
    // A flow's NAT was decided by its first packet: one a worker tracked (untranslated) would stay so
    // through the node once it is the gateway, and the other way round (conntrack.ts).
    this.gateway = spec.node.role === 'gateway';
    let flowsForgotten = 0;
    if (wasGateway !== this.gateway) {
      try {
        flowsForgotten = forgetFlows(
          familiesOf(spec).flatMap((family) => spec.peers.flatMap((p) => remotePrefixesOf(p, family))),
          this.netns,
        );
      } catch (err) {
        failed.push(`forgetting the flows tracked before the role changed: ${message(err)}`);
      }
    }
    return {
      devices,
      fdb: count(fdb),
      neighbours: neighbourChanges.reduce((n, c) => n + count(c), 0),
      routes: count(routes),
      rules: count(rules),
      natChanged: nat.changed,
      flowsForgotten,
      ipsec: ipsec.result,
      blocked: [...blocked].map(([peer, why]) => `peer ${peer}: ${why}`),
      failed: [...failed, ...ipsec.failed],
    };
  }
}

/** Whether an apply changed anything (for one log line per change, not per tick). */
export function kernelApplyChanged(r: KernelApplyResult): boolean {
  return (
    r.devices.created.length +
      r.devices.recreated.length +
      r.devices.deleted.length +
      r.devices.mtuChanged.length +
      r.fdb +
      r.neighbours +
      r.routes +
      r.rules +
      r.ipsec.added +
      r.ipsec.updated +
      r.ipsec.removed >
      0 ||
    r.natChanged ||
    r.flowsForgotten > 0 ||
    r.failed.length > 0
  );
}

/**
 * Removes everything the fallback put on a node and nothing else: its rules, table 18952, its devices
 * (their FDB and neighbour entries go with them), its xfrm states and policies and its nftables
 * tables. Safe to run twice.
 */
export function cleanupKernelNode(netns?: string): { rules: number; routes: number; devices: string[]; xfrm: number; nat: boolean } {
  const rules = reconcileRules([], netns);
  const routes = reconcileRoutes([], { table: routingTable }, netns);
  const devices = reconcileTunnelDevices([], isFallbackDevice, netns);
  const xfrm = removeIpsec(netns === undefined ? {} : { netns });
  const nat = removeNat(netns);
  return { rules: rules.deleted.length, routes: routes.deleted.length, devices: devices.deleted, xfrm, nat: nat.changed };
}

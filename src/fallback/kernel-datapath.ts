/**
 * The kernel-route fallback of one node, the imperative shell around the pure plans: VXLAN devices, FDB
 * and neighbour entries, table 18952 and its rules, and the nftables NAT, each reconciled (read, diff,
 * apply) so a second apply changes nothing and anything removed by hand comes back.
 */
import { reconcileFdb } from '../kernel/fdb';
import { reconcileNeighbours } from '../kernel/neighbours';
import { reconcileRoutes } from '../kernel/routes';
import { reconcileRules } from '../kernel/rules';
import type { NodeDataplaneSpec } from '../nodespec/spec';
import { reconcileVxlanDevices } from '../kernel/vxlan-devices';
import { isFallbackDevice, overlayDevice, routingTable, tunnelDevice } from './identities';
import { applyNat, removeNat } from './nat-apply';
import { natRuleset } from './nat-ruleset';
import { planKernelRouting } from './routing-plan';

export interface KernelApplyResult {
  devices: { created: string[]; recreated: string[]; deleted: string[] };
  fdb: number;
  neighbours: number;
  routes: number;
  rules: number;
  natChanged: boolean;
  /** Entries the kernel refused, with its message. */
  failed: string[];
}

const count = (c: { added: unknown[]; changed: unknown[]; deleted: unknown[] }) => c.added.length + c.changed.length + c.deleted.length;

export class KernelDatapath {
  /** `netns`: the node's namespace by name; default: the agent's own. */
  constructor(private readonly netns?: string) {}

  apply(spec: NodeDataplaneSpec): KernelApplyResult {
    const plan = planKernelRouting(spec);
    const devices = reconcileVxlanDevices(plan.devices, isFallbackDevice, this.netns);
    const fdb = reconcileFdb(plan.fdb.map(({ mac, dst }) => ({ mac, dst })), overlayDevice, this.netns);
    const neighbourChanges = plan.devices.map((d) =>
      reconcileNeighbours(plan.neighbours.filter((n) => n.device === d.name).map((n) => ({ address: n.address, lladdr: n.mac })), d.name, this.netns));
    const routes = reconcileRoutes(plan.routes.map((r) => ({ dst: r.prefix, via: r.via, dev: r.device, onlink: true })), { table: routingTable }, this.netns);
    const rules = reconcileRules(plan.rules.map((r) => ({ priority: r.priority, table: r.table, ...(r.to ? { to: r.to } : {}), ...(r.iif ? { iif: r.iif } : {}) })), this.netns);
    const nat = applyNat(natRuleset(spec, { peerInterface: tunnelDevice }), this.netns);
    const failed = [fdb, ...neighbourChanges, routes, rules].flatMap((c) => c.failed.map((f) => `${JSON.stringify(f.item)}: ${f.error}`));
    return {
      devices,
      fdb: count(fdb),
      neighbours: neighbourChanges.reduce((n, c) => n + count(c), 0),
      routes: count(routes),
      rules: count(rules),
      natChanged: nat.changed,
      failed,
    };
  }
}

/** Whether an apply changed anything (for one log line per change, not per tick). */
export function kernelApplyChanged(r: KernelApplyResult): boolean {
  return r.devices.created.length + r.devices.recreated.length + r.devices.deleted.length + r.fdb + r.neighbours + r.routes + r.rules > 0 || r.natChanged || r.failed.length > 0;
}

/**
 * Removes everything the fallback put on a node and nothing else: its rules, table 18952, its devices
 * (their FDB and neighbour entries go with them) and its nftables tables. Safe to run twice.
 */
export function cleanupKernelNode(netns?: string): { rules: number; routes: number; devices: string[]; nat: boolean } {
  const rules = reconcileRules([], netns);
  const routes = reconcileRoutes([], { table: routingTable }, netns);
  const devices = reconcileVxlanDevices([], isFallbackDevice, netns);
  const nat = removeNat(netns);
  return { rules: rules.deleted.length, routes: routes.deleted.length, devices: devices.deleted, nat: nat.changed };
}

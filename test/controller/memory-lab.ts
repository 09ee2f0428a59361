/**
 * The controllers of test/controller/three-clusters.ts stepped by hand over one in-memory run directory,
 * as src/controller/files/controller.ts steps one: the network reconcile, then the services round.
 */
import assert from 'node:assert/strict';
import { type ControllerConfig, readControllerConfig } from '../../src/api/controller-config';
import { runDirPaths } from '../../src/api/run-dir';
import { type WholeNodeDataplaneSpecDocument, readNodeDataplane } from '../../src/api/node-dataplane';
import { type TunnelEndpointSpecDocument, writeTunnelEndpoint } from '../../src/api/tunnel-endpoint';
import { readExchange, readHeartbeats, runDirFiles, syncFiles } from '../../src/controller/files/exchange';
import { type ServicesRound, reconcileServices } from '../../src/controller/files/services';
import type { GatewayTenure } from '../../src/controller/election';
import { type ReconcileResult, reconcile } from '../../src/controller/reconcile';
import type { IpamPlanes } from '../../src/network-ipam/planes';
import { MemoryRunDir } from './memory-run-dir';
import { threeClusters as configs } from './three-clusters';

/**
 * The three clusters of test/controller/three-clusters.ts in one in-memory run dir. Each round runs
 * every controller's step once; agents are stood in for by heartbeats.
 */
interface Controller {
  /** The last services round. */
  services?: ServicesRound;
  config: ControllerConfig;
  ipam: IpamPlanes | undefined;
  /** The last election, carried to the next step as controller.ts does. */
  previous?: GatewayTenure;
  /** When the controller started (start-up grace); undefined: none. */
  startedAt?: number;
  last?: ReconcileResult;
}

export class Lab {
  readonly disk = new MemoryRunDir();
  readonly controllers = new Map<string, Controller>();
  now = Date.parse('2026-01-01T00:00:00.000Z');

  constructor() {
    for (const [id, doc] of Object.entries(configs)) this.controllers.set(id, { config: readControllerConfig(doc), ipam: undefined });
  }

  heartbeat(cluster: string, node: string, ready = true): void {
    const beat = { ready, time: new Date(this.now).toISOString(), dataplane: 'ebpf', specGeneration: 1 };
    this.disk.write(runDirPaths.heartbeat(cluster, node), JSON.stringify(beat));
  }

  heartbeatAll(): void {
    for (const [id, c] of this.controllers) for (const n of c.config.nodes) this.heartbeat(id, n.name);
  }

  /** One step of one controller, as controller.ts does it; true when it changed a file or its IPAM state. */
  step(id: string): boolean {
    const c = this.controllers.get(id)!;
    const exchange = readExchange(this.disk, id);
    const result = reconcile({
      config: c.config,
      ipam: c.ipam,
      exchange,
      heartbeats: readHeartbeats(
        this.disk,
        id,
        c.config.nodes.map((n) => n.name),
      ),
      previous: c.previous,
      now: this.now,
      ...(c.startedAt !== undefined ? { startedAt: c.startedAt } : {}),
    });
    const wanted = runDirFiles(result, id, exchange.written);
    const { written, deleted } = syncFiles(this.disk, wanted.files, wanted.deletes);
    c.services = reconcileServices(
      this.disk,
      id,
      result.ipam,
      result.tunnels.map((t) => t.clusterId),
      new Date(this.now).toISOString(),
    );
    const changed = written.length + deleted.length + c.services.written.length + c.services.deleted.length > 0 || result.ipam !== c.ipam;
    c.ipam = result.ipam;
    c.previous = result.election;
    c.last = result;
    return changed;
  }

  /** Rounds until one changes nothing; returns how many it took. */
  converge(): number {
    for (let round = 1; round <= 10; round++) {
      let changed = false;
      for (const id of this.controllers.keys()) changed = this.step(id) || changed;
      if (!changed) return round;
    }
    throw new Error('the controllers did not converge in 10 rounds');
  }

  services(id: string): ServicesRound {
    return this.controllers.get(id)!.services!;
  }

  result(id: string): ReconcileResult {
    return this.controllers.get(id)!.last!;
  }

  /** The TunnelEndpoint as its document (text), for comparing with literals. */
  tunnel(from: string, to: string): TunnelEndpointSpecDocument {
    const tunnel = this.result(from).tunnels.find((t) => t.clusterId === to);
    assert.ok(tunnel, `${from} has no TunnelEndpoint toward ${to}`);
    return writeTunnelEndpoint(tunnel);
  }

  /** The node's spec file, checked by its reader, as the document it holds. */
  nodeSpec(cluster: string, node: string): WholeNodeDataplaneSpecDocument {
    const object = this.disk.json(runDirPaths.nodeSpec(cluster, node)) as { spec: WholeNodeDataplaneSpecDocument };
    readNodeDataplane(object);
    return object.spec;
  }

  reconfigure(id: string, change: (doc: Record<string, unknown>) => void): void {
    const doc = structuredClone(configs[id]) as Record<string, unknown>;
    change(doc);
    this.controllers.get(id)!.config = readControllerConfig(doc);
  }
}

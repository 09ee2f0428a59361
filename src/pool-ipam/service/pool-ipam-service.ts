/**
 * The node's pool IPAM service: the informers, the allocator behind the unix socket `strait-ipam` calls,
 * garbage collection and the pools' status counts. Run by the agent in Kubernetes mode and by
 * `strait pool-ipam serve`. The socket answers STATUS "not ready" (and ADD "try again later") until every
 * informer has listed: an allocation from a half-read cache could pick a claimed address.
 */
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../../log';
import { probeAddress } from '../address-probe';
import { type GcSettings, defaultGcSettings } from '../gc-plan';
import { IpamError } from '../ipam-error';
import { serveIpam } from '../ipam-server';
import { cniErrorCodes } from '../protocol';
import { type AddressProber, Allocator } from './allocator';
import { PoolIpamView } from './cluster-view';
import { GarbageCollector } from './garbage-collector';
import { PoolStatusWriter } from './pool-status';

export interface PoolIpamServiceOptions {
  kubeConfig: KubeConfig;
  node: string;
  socket: string;
  log: Logger;
  gcIntervalMs?: number;
  gc?: Partial<GcSettings>;
  probe?: AddressProber;
  /** How long the socket waits for a request to arrive whole (ipam-server.ts). */
  requestArrivalMs?: number;
}

export interface PoolIpamService {
  allocator: Allocator;
  collector: GarbageCollector;
  /** Resolves once every informer has listed (the socket serves from the start). */
  synced: Promise<void>;
  stop(): Promise<void>;
}

export async function startPoolIpamService(options: PoolIpamServiceOptions): Promise<PoolIpamService> {
  const { kubeConfig, node, log } = options;
  const view = new PoolIpamView(kubeConfig, log);
  const probe: AddressProber = options.probe ?? ((p) => probeAddress(p));
  const allocator = new Allocator({ kubeConfig, view, node, probe, log });
  const collector = new GarbageCollector({
    view,
    allocator,
    node,
    settings: { ...defaultGcSettings, ...options.gc },
    intervalMs: options.gcIntervalMs ?? 10 * 60_000,
    log,
  });
  const status = new PoolStatusWriter(kubeConfig.makeApiClient(CustomObjectsApi), view, allocator, log);
  const ready = () => {
    if (!view.synced)
      throw new IpamError(cniErrorCodes.tryAgainLater, `the pool IPAM service of node ${node} is still reading the API server`);
  };
  const server = await serveIpam({
    socket: options.socket,
    log,
    ...(options.requestArrivalMs !== undefined ? { requestArrivalMs: options.requestArrivalMs } : {}),
    handler: {
      add: async (req) => (ready(), allocator.add(req)),
      check: async (req) => (ready(), allocator.check(req)),
      del: async (req) => {
        ready();
        await allocator.del(req);
      },
      gc: async (req) => (ready(), allocator.gc(req)),
      status: async () =>
        view.synced ? { ready: true } : { ready: false, message: `the pool IPAM service of node ${node} is still reading the API server` },
    },
  });
  const synced = view.start().then(() => {
    collector.start();
    status.start();
    log.info({ socket: server.socket, node }, 'pool IPAM serving');
  });
  // Not every caller awaits it (the agent does not): a failure is logged here, and STATUS keeps saying not ready.
  synced.catch((err: unknown) => log.error({ err: (err as Error).message }, 'the pool IPAM informers did not start'));
  return {
    allocator,
    collector,
    synced,
    stop: async () => {
      collector.stop();
      status.stop();
      await server.close();
      await view.stop();
    },
  };
}

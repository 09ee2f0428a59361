/**
 * "Two nodes never give the same address": the pool IPAM services of two nodes allocate from one pool of
 * the same API server at once, until it is full. The IPClaim named after the address is the lock: a
 * service that finds it taken (a 409 on create) moves on to the next address. Both walks start at the
 * node's own offset into the pool (startOffset), so they meet, and the 409 path runs.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { AddRequest } from '../../src/pool-ipam/protocol';
import { createLogger } from '../../src/log';
import { startOffset } from '../../src/pool-ipam/pick-address';
import { type PoolIpamService, startPoolIpamService } from '../../src/pool-ipam/service/pool-ipam-service';
import { requireRoot } from '../support/kernel';
import { captureLog } from '../support/log-capture';
import { waitFor } from '../support/wait';
import { type PoolIpamFixture, poolIpamFixture } from './fixture';

const poolSize = 16;

describe('pool IPAM: two nodes allocating from one pool at once', function () {
  requireRoot(this);
  this.timeout(120_000);
  const apiLog = captureLog('debug');
  let f: PoolIpamFixture;
  let serviceB: PoolIpamService | undefined;

  before(async () => {
    f = await poolIpamFixture({ apiServer: { logger: apiLog.log } });
    serviceB = await startPoolIpamService({
      kubeConfig: f.api.kubeConfig,
      node: 'node-b',
      socket: join(f.dir, 'run', 'b.sock'),
      log: createLogger('pool-ipam-b', 'silent'),
      gcIntervalMs: 3_600_000,
    });
    await serviceB.synced;
  });
  after(async () => {
    await serviceB?.stop();
    await f?.close();
  });

  it('fills the pool with every address given once, each claim held by the node that gave it, and the second claimant of an address moving on', async () => {
    // Each node walks up from its own offset; unless the two are half the pool apart, eight ADDs each meet.
    assert.equal(
      (startOffset('node-b', BigInt(poolSize)) - startOffset('node-a', BigInt(poolSize)) + BigInt(poolSize)) % BigInt(poolSize) !== 8n,
      true,
      'the walks overlap',
    );
    await f.pool('shared', { subnet: '10.6.12.0/24', ips: [`10.6.12.10-10.6.12.${10 + poolSize - 1}`] });
    await waitFor("the pool in node-b's cache", () => serviceB!.allocator.pools().valid.some((p) => p.name === 'shared'));
    const services = { 'node-a': f.service!, 'node-b': serviceB! };
    const pods = await Promise.all(
      Array.from({ length: poolSize }, (_, i) =>
        f
          .pod(`p${i}`, { node: i % 2 === 0 ? 'node-a' : 'node-b' })
          .then((pod) => ({ ...pod, node: i % 2 === 0 ? 'node-a' : 'node-b' }) as const),
      ),
    );
    const mark = apiLog.lines.length;
    const given = await Promise.all(
      pods.map((pod) => {
        const request: AddRequest = {
          containerId: pod.containerId,
          ifname: 'eth0',
          network: 'underlay',
          netns: pod.netns,
          podNamespace: pod.namespace,
          podName: pod.name,
          podUid: pod.uid,
          options: { defaultIpv4Pools: ['shared'], defaultIpv6Pools: [], detectConflict: false, detectGateway: false },
        };
        return services[pod.node].allocator.add(request).then((r) => ({ pod, address: r.ips[0]!.address }));
      }),
    );

    const addresses = given.map((g) => g.address.split('/')[0]);
    assert.equal(new Set(addresses).size, poolSize, `every address given once: ${addresses.sort().join(', ')}`);
    const claims = await f.claims();
    assert.deepEqual(claims.map((c) => c.name).sort(), [...addresses].sort(), 'one IPClaim per address given, nothing else');
    for (const { pod, address } of given) {
      const claim = claims.find((c) => c.name === address.split('/')[0])!;
      assert.deepEqual([claim.spec.podName, claim.spec.node], [pod.name, pod.node], `${address}'s claim`);
    }
    const conflicts = apiLog.lines
      .slice(mark)
      .filter((l) => l.msg === 'request' && l.method === 'POST' && String(l.path).endsWith('/ipclaims') && l.code === 409);
    process.stdout.write(
      `      ${poolSize} ADDs on two nodes: ${conflicts.length} claim creates refused with 409 (taken by the other node)\n`,
    );
    assert.ok(conflicts.length > 0, 'the second claimant of an address was refused at least once (the 409 path ran)');
  });
});

/**
 * strait-ipam under Debian's real ipvlan plugin: in the VM (@vm-kernel), since the usual test machine's
 * kernel has no ipvlan (CONFIG_IPVLAN off); the same test as macvlan's and bridge's on the host.
 */
import { addCheckDel } from '../pool-ipam/add-check-del';
import { type PoolIpamFixture, poolIpamFixture } from '../pool-ipam/fixture';
import { requireRoot } from '../support/kernel';

describe('strait-ipam chained under the real ipvlan plugin @vm-kernel', function () {
  this.timeout(120_000);
  requireRoot(this);
  let f: PoolIpamFixture;
  beforeEach(async () => {
    f = await poolIpamFixture();
  });
  afterEach(async () => f.close());

  it('ipvlan: ADD gives the pod an address of the CNI default pool with its gateway and routes, CHECK passes, DEL releases it, DEL again succeeds', () =>
    addCheckDel(f, 'ipvlan'));
});

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { cleanupNodeDataplanes, openDataplane } from '../../src/dataplane/open';
import { ensureBpffs } from '../../src/native';
import { findAttachments } from '../../src/dataplane/ebpf/attachments';
import { ip, run } from '../../src/kernel/command';
import { createNetns, deleteNetns, netnsPath } from '../../src/kernel/netns';
import { hubSpec } from '../support/node-specs';
import { requireRoot, uniqueName } from '../support/kernel';

describe('switching a node between dataplanes (real kernel)', function () {
  requireRoot(this);
  let ns: string;
  let pinRoot: string;
  beforeEach(() => {
    ensureBpffs();
    ns = uniqueName('strait-test-sw');
    pinRoot = join('/sys/fs/bpf', uniqueName('strait-test'));
    createNetns(ns);
    ip(['link', 'set', 'lo', 'up'], ns);
    ip(['link', 'add', 'p-a', 'type', 'veth', 'peer', 'name', 'p-a-peer'], ns);
  });
  afterEach(() => {
    try {
      cleanupNodeDataplanes(pinRoot, ns);
    } finally {
      deleteNetns(ns);
    }
  });

  const options = () => ({ pinRoot, podInterfaces: /^p-a$/, attachMode: 'auto' as const, netns: ns });
  const links = () =>
    run(['ip', '-n', ns, '-br', 'link'])
      .split('\n')
      .map((l) => l.split(/[\s@]+/)[0])
      .filter(Boolean)
      .sort();
  const nftTables = () => run(['ip', 'netns', 'exec', ns, 'nft', 'list', 'tables']).trim();

  it('eBPF to kernel removes the programs, pins and device; kernel to eBPF removes the devices, rules, table and NAT', async () => {
    const ebpf = await openDataplane('ebpf', options());
    ebpf.apply(hubSpec());
    ebpf.close();
    assert.equal(findAttachments(pinRoot, netnsPath(ns)).length, 3);
    assert.ok(links().includes('strait0'));

    const kernel = await openDataplane('kernel', options());
    assert.deepEqual(findAttachments(pinRoot, netnsPath(ns)), [], 'no program of the eBPF dataplane is left');
    assert.equal(existsSync(pinRoot), false, 'no pinned map is left');
    assert.ok(!links().includes('strait0'));
    kernel.apply(hubSpec());
    kernel.close();
    assert.ok(links().includes('strait.vxlan') && nftTables().includes('strait'));

    const back = await openDataplane('ebpf', options());
    try {
      assert.deepEqual(links(), ['lo', 'p-a', 'p-a-peer'], 'no device of the kernel fallback is left');
      assert.equal(nftTables(), '', 'no nftables table of the fallback is left');
      assert.ok(!run(['ip', '-n', ns, 'rule']).includes('18952'));
      back.apply(hubSpec());
      assert.equal(findAttachments(pinRoot, netnsPath(ns)).length, 3);
    } finally {
      back.close();
    }
  });
});

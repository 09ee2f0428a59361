import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { BpfError, BpfMap, MapType, ensureBpffs, pinFd, u32, unpin } from '../../src/native';
import { requireRoot, tempPinDir } from '../support/kernel';

describe('pinning (real kernel)', function () {
  requireRoot(this);
  let pins: ReturnType<typeof tempPinDir>;
  beforeEach(() => {
    pins = tempPinDir();
  });
  afterEach(() => pins.cleanup());

  it('knows bpffs is mounted at /sys/fs/bpf and a plain directory is not bpffs', () => {
    assert.equal(ensureBpffs('/sys/fs/bpf', false), true);
    assert.equal(ensureBpffs('/tmp', false), false);
  });

  it('pins a map, opens it by path in another handle, and unpins it', () => {
    const map = BpfMap.create({ type: MapType.Hash, name: 'pin_test', key: u32, value: u32, maxEntries: 8 });
    const path = join(pins.dir, 'sub', 'pin_test');
    try {
      map.update(7, 70);
      map.pin(path);
      const again = BpfMap.openPinned(path, u32, u32);
      try {
        assert.equal(again.info.id, map.info.id);
        assert.equal(again.lookup(7), 70);
        again.update(8, 80);
        assert.equal(map.lookup(8), 80);
      } finally {
        again.close();
      }
      assert.throws(
        () => pinFd(map.fd, path),
        (e: BpfError) => e instanceof BpfError && e.code === 'EEXIST' && e.operation === 'pin',
      );
      assert.equal(unpin(path), true);
      assert.equal(existsSync(path), false);
      assert.equal(unpin(path), false);
    } finally {
      map.close();
    }
  });

  it('fails clearly when nothing is pinned at a path', () => {
    assert.throws(
      () => BpfMap.openPinned(join(pins.dir, 'absent'), u32, u32),
      (e: BpfError) => e instanceof BpfError && e.code === 'ENOENT' && e.operation === 'open pinned object' && e.message.includes('absent'),
    );
  });
});

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileStatusSink } from '../../src/agent/files/status-sink';
import type { NodeDataplaneStatus } from '../../src/api/node-dataplane';

describe('agent status sink: the heartbeat file', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'strait-heartbeat-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const beat = (ready: boolean, specGeneration: number): NodeDataplaneStatus => ({
    ready,
    time: new Date(1_700_000_000_000 + specGeneration).toISOString(),
    dataplane: 'ebpf',
    specGeneration,
  });

  it('writes the whole heartbeat, creating the status directory, and replaces it leaving no temporary file', () => {
    const path = join(dir, 'cluster-a', 'status', 'a-gw.json');
    new FileStatusSink(path).write(beat(true, 1));
    assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')), beat(true, 1));
    const inode = statSync(path).ino;
    new FileStatusSink(path).write(beat(false, 2));
    assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')), beat(false, 2));
    assert.notEqual(statSync(path).ino, inode, 'a new file renamed over the old one, not rewritten in place');
    assert.deepEqual(readdirSync(join(dir, 'cluster-a', 'status')), ['a-gw.json']);
  });

  it('overwrites a temporary file left by a crash', () => {
    const path = join(dir, 'n1.json');
    writeFileSync(join(dir, '.n1.json.tmp'), '{"ready":tr');
    new FileStatusSink(path).write(beat(true, 2));
    assert.deepEqual(readdirSync(dir), ['n1.json']);
    assert.equal(JSON.parse(readFileSync(path, 'utf8')).specGeneration, 2);
  });
});

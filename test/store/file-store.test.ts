import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StateError } from '../../src/errors';
import { temporaryPathFor } from '../../src/store/atomic-file';
import { FileStore } from '../../src/store/file-store';
import { type Codec, transact } from '../../src/store/store';

const jsonCodec: Codec<{ n: number }> = {
  encode: (v) => JSON.stringify(v),
  decode: (text) => {
    const v = JSON.parse(text) as { n?: unknown };
    if (typeof v.n !== 'number') throw new StateError('n is missing');
    return { n: v.n };
  },
};

/** A pid that is certainly dead: a child that has already exited. */
function deadPid(): number {
  return Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout);
}

describe('FileStore', () => {
  let dir: string;
  let path: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'strait-store-'));
    path = join(dir, 'state.json');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('loads undefined before the first save, then exactly what was saved, and leaves no temporary file', async () => {
    const store = new FileStore(path, jsonCodec);
    assert.equal(await store.load(), undefined);
    await store.save({ n: 1 });
    await store.save({ n: 2 });
    assert.deepEqual(await store.load(), { n: 2 });
    assert.deepEqual(readdirSync(dir), ['state.json']);
  });

  it('ignores a half-written temporary file left by a crash, and overwrites it on the next save', async () => {
    const store = new FileStore(path, jsonCodec);
    await store.save({ n: 1 });
    writeFileSync(temporaryPathFor(path), '{"n": 9');
    assert.deepEqual(await store.load(), { n: 1 });
    await store.save({ n: 3 });
    assert.deepEqual(await store.load(), { n: 3 });
    assert.equal(existsSync(temporaryPathFor(path)), false);
  });

  it('refuses a state it cannot decode, naming the file', async () => {
    writeFileSync(path, '{"m": 1}');
    await assert.rejects(
      new FileStore(path, jsonCodec).load(),
      (err: unknown) => err instanceof StateError && err.message === `${path}: n is missing`,
    );
  });

  it('refuses a state path that holds a symlink or a directory, naming it, on load and on save, and leaves it', async () => {
    const target = join(dir, 'target.json');
    writeFileSync(target, '{"n": 1}');
    symlinkSync(target, path);
    const store = new FileStore(path, jsonCodec);
    const naming = (kind: string) => (err: unknown) =>
      err instanceof StateError && err.message.startsWith(`${path}: is ${kind}, not a regular file`);
    await assert.rejects(store.load(), naming('a symbolic link'));
    await assert.rejects(store.save({ n: 2 }), naming('a symbolic link'));
    assert.equal(readFileSync(target, 'utf8'), '{"n": 1}');
    rmSync(path);
    mkdirSync(path);
    await assert.rejects(store.load(), naming('a directory'));
    await assert.rejects(store.save({ n: 2 }), naming('a directory'));
    assert.deepEqual(readdirSync(dir).sort(), ['state.json', 'target.json']);
  });

  it('refuses a second writer while the first holds the lock, then lets it in', async () => {
    const first = await new FileStore(path, jsonCodec).lock();
    await assert.rejects(
      new FileStore(path, jsonCodec).lock(),
      (err: unknown) => err instanceof StateError && err.message.includes(`held by process ${process.pid}`),
    );
    await first.release();
    const second = await new FileStore(path, jsonCodec).lock();
    await second.release();
    assert.deepEqual(readdirSync(dir), []);
  });

  it('refuses while another live process holds the lock', async () => {
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)']);
    try {
      writeFileSync(`${path}.lock`, `${child.pid}\n`);
      await assert.rejects(
        new FileStore(path, jsonCodec).lock(),
        (err: unknown) => err instanceof StateError && err.message.includes(`held by process ${child.pid}`),
      );
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('takes over the lock of a dead writer and removes what killed writers left behind', async () => {
    const dead = deadPid();
    writeFileSync(`${path}.lock`, `${dead}\n`);
    writeFileSync(`${path}.lock.${dead}`, `${dead}\n`);
    writeFileSync(`${path}.lock.stale.${dead}`, `${dead}\n`);
    const lock = await new FileStore(path, jsonCodec).lock();
    assert.equal(readFileSync(`${path}.lock`, 'utf8'), `${process.pid}\n`);
    assert.deepEqual(readdirSync(dir), ['state.json.lock']);
    await lock.release();
  });

  it('transact saves the new state, saves nothing when it is unchanged or the change throws, and always unlocks', async () => {
    const store = new FileStore(path, jsonCodec);
    assert.equal(await transact(store, () => ({ state: { n: 1 }, result: 'made' })), 'made');
    const before = readFileSync(path, 'utf8');
    await assert.rejects(
      transact(store, () => {
        throw new StateError('no');
      }),
      StateError,
    );
    await transact(store, (current) => ({ state: current!, result: undefined }));
    assert.equal(readFileSync(path, 'utf8'), before);
    assert.deepEqual(readdirSync(dir), ['state.json']);
  });
});

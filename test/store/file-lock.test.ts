import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StateError } from '../../src/errors';
import { FileLock } from '../../src/store/file-lock';

describe('FileLock', () => {
  let dir: string;
  let lock: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'strait-lock-'));
    lock = join(dir, 'ipam.json.lock');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  // An empty lock is what a power cut between the lock's write and its link left (before the write was
  // flushed); the others name no process (kill(0, 0) signals our own process group and succeeds).
  for (const text of ['', '\n', 'garbage', '0\n', '-1\n', '00042\n', '1e3\n', `${2 ** 22 + 1}\n`, '99999999999999999999\n']) {
    it(`takes over a lock file that names no process: ${JSON.stringify(text)}`, async () => {
      writeFileSync(lock, text);
      const taken = FileLock.acquire(lock);
      assert.equal(readFileSync(lock, 'utf8'), `${process.pid}\n`);
      await taken.release();
      assert.deepEqual(readdirSync(dir), []);
    });
  }

  it("takes over a lock naming this process's pid that this process does not hold (a container's pid 1 after a restart), not one it holds", async () => {
    writeFileSync(lock, `${process.pid}\n`);
    const taken = FileLock.acquire(lock);
    assert.throws(
      () => FileLock.acquire(lock),
      (err: unknown) => err instanceof StateError && err.message.startsWith(`${lock} is held by process ${process.pid}`),
    );
    await taken.release();
    assert.deepEqual(readdirSync(dir), []);
  });

  it('refuses at once, naming it, a lock path that holds a symlink or a directory, and leaves it', () => {
    const target = join(dir, 'target');
    writeFileSync(target, '1\n');
    symlinkSync(target, lock);
    assert.throws(
      () => FileLock.acquire(lock),
      (err: unknown) => err instanceof StateError && err.message.startsWith(`${lock}: is a symbolic link, not a regular file`),
    );
    rmSync(lock);
    mkdirSync(lock);
    assert.throws(
      () => FileLock.acquire(lock),
      (err: unknown) => err instanceof StateError && err.message.startsWith(`${lock}: is a directory, not a regular file`),
    );
    assert.deepEqual(readdirSync(dir).sort(), ['ipam.json.lock', 'target']);
    assert.equal(readFileSync(target, 'utf8'), '1\n');
  });

  it('does not write its pid through a symlink planted at its private pid file', async () => {
    const target = join(dir, 'target');
    writeFileSync(target, 'not yours\n');
    symlinkSync(target, `${lock}.${process.pid}`);
    const taken = FileLock.acquire(lock);
    assert.equal(readFileSync(target, 'utf8'), 'not yours\n');
    assert.equal(readFileSync(lock, 'utf8'), `${process.pid}\n`);
    await taken.release();
    assert.deepEqual(readdirSync(dir), ['target']);
  });

  it('makes the directory of a state that has none yet, and removes it again when nothing was saved in it', async () => {
    const deep = join(dir, 'a', 'b', 'ipam.json.lock');
    const unused = FileLock.acquire(deep);
    assert.deepEqual(readdirSync(join(dir, 'a', 'b')), ['ipam.json.lock']);
    await unused.release();
    assert.deepEqual(readdirSync(dir), [], 'a writer refused after taking the lock leaves no directory behind');
    const used = FileLock.acquire(deep);
    writeFileSync(join(dir, 'a', 'b', 'ipam.json'), '{}');
    await used.release();
    assert.deepEqual(readdirSync(join(dir, 'a', 'b')), ['ipam.json']);
  });
});

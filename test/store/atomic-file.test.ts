import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { temporaryPathFor, writeFileAtomic, writeNewFile } from '../../src/store/atomic-file';
import { FileStore } from '../../src/store/file-store';

const modeOf = (path: string) => lstatSync(path).mode & 0o777;

describe('writeFileAtomic', () => {
  let dir: string;
  let path: string;
  let target: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'strait-atomic-'));
    path = join(dir, 'ipam.json');
    // What a planted symlink points at: a file root must never write through to.
    target = join(dir, 'target');
    writeFileSync(target, 'not yours\n', { mode: 0o644 });
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('does not write through a symlink planted at the temporary path: the target is untouched, the file a regular one', () => {
    symlinkSync(target, temporaryPathFor(path));
    writeFileAtomic(path, '{"n":1}', 0o600);
    assert.equal(readFileSync(target, 'utf8'), 'not yours\n');
    assert.ok(lstatSync(path).isFile(), 'the state is a regular file, not the planted symlink');
    assert.equal(readFileSync(path, 'utf8'), '{"n":1}');
    assert.deepEqual(readdirSync(dir).sort(), ['ipam.json', 'target']);
  });

  it("gives the file its mode whatever a leftover temporary's mode or the umask: a FileStore state is 0600", async () => {
    writeFileSync(temporaryPathFor(path), 'half a state', { mode: 0o666 });
    await new FileStore(path, { encode: String, decode: String }).save('{"n":2}');
    assert.equal(modeOf(path), 0o600);
    const umask = process.umask(0o077);
    try {
      writeFileAtomic(join(dir, 'spec.json'), '{}', 0o644);
      writeNewFile(join(dir, 'plugin'), '#!/bin/sh\n', 0o755);
    } finally {
      process.umask(umask);
    }
    assert.equal(modeOf(join(dir, 'spec.json')), 0o644);
    assert.equal(modeOf(join(dir, 'plugin')), 0o755);
  });

  it('replaces a symlink or a fifo at the path itself, never what the symlink points to', () => {
    const link = join(dir, 'link');
    symlinkSync(target, link);
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    for (const at of [link, fifo]) {
      writeFileAtomic(at, 'mine');
      assert.ok(lstatSync(at).isFile(), at);
      assert.equal(readFileSync(at, 'utf8'), 'mine');
    }
    assert.equal(readFileSync(target, 'utf8'), 'not yours\n');
    assert.deepEqual(readdirSync(dir).sort(), ['fifo', 'link', 'target']);
  });

  it('fails naming the path when a directory is in the way, at the path or at its temporary, changing nothing', () => {
    writeFileAtomic(path, 'old');
    mkdirSync(join(temporaryPathFor(path), 'inside'), { recursive: true });
    const naming = (at: string) => (err: unknown) =>
      (err as NodeJS.ErrnoException).code !== undefined && (err as Error).message.startsWith(`${at}: cannot `);
    assert.throws(() => writeFileAtomic(path, 'new'), naming(temporaryPathFor(path)));
    assert.equal(readFileSync(path, 'utf8'), 'old');
    const directory = join(dir, 'directory');
    mkdirSync(directory);
    assert.throws(() => writeFileAtomic(directory, 'new'), naming(directory));
    assert.deepEqual(
      readdirSync(dir).sort(),
      ['.ipam.json.tmp', 'directory', 'ipam.json', 'target'],
      'no temporary left by the failed write',
    );
  });
});

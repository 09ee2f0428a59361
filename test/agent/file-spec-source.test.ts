import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileSpecSource } from '../../src/agent/files/spec-source';
import { captureLog } from '../support/log-capture';

describe('spec file source', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'strait-spec-source-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the file again only when it changed: a rename over it, an edit in place of the same size, its removal', () => {
    const path = join(dir, 'n1.json');
    const source = new FileSpecSource(path, captureLog().log);
    assert.equal(source.read(), undefined);
    writeFileSync(path, '{"a":1}');
    const first = source.read();
    // The sha256 of the text, not the text (megabytes at 100,000 NatMappings).
    assert.equal(first?.version, '015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862');
    assert.equal(source.read(), first, 'unchanged: the same document, the file not read again');
    writeFileSync(join(dir, '.n1.json.tmp'), '{"a":2}');
    renameSync(join(dir, '.n1.json.tmp'), path);
    assert.equal(source.read()?.version, '7e8059f495589fcd981232cc11d00b00da3802c01d688fa1cf1f6bed6e5bb33c', 'a new file renamed over it');
    writeFileSync(path, '{"a":3}');
    assert.deepEqual(source.read()?.parse(), { a: 3 }, 'an edit in place, same size');
    rmSync(path);
    assert.equal(source.read(), undefined);
  });

  it('parses a document again from the file, as its text is not kept once parsed', () => {
    const path = join(dir, 'n1.json');
    writeFileSync(path, '{"a":1}');
    const document = new FileSpecSource(path, captureLog().log).read()!;
    assert.deepEqual(document.parse(), { a: 1 });
    assert.deepEqual(document.parse(), { a: 1 });
  });

  it('never parses another version than the one it read: the file changed since, a parse again refuses', () => {
    const path = join(dir, 'n1.json');
    writeFileSync(path, '{"a":1}');
    const document = new FileSpecSource(path, captureLog().log).read()!;
    writeFileSync(path, '{"a":2}');
    assert.deepEqual(document.parse(), { a: 1 }, 'the text read, held until parsed');
    assert.throws(() => document.parse(), /n1\.json changed since it was read; the next read takes the new one/);
  });
});

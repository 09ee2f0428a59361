import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileSpecSource } from '../../src/agent/spec-source';
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
    assert.equal(first?.version, '{"a":1}');
    assert.equal(source.read(), first, 'unchanged: the same document, the file not read again');
    writeFileSync(join(dir, '.n1.json.tmp'), '{"a":2}');
    renameSync(join(dir, '.n1.json.tmp'), path);
    assert.equal(source.read()?.version, '{"a":2}', 'a new file renamed over it');
    writeFileSync(path, '{"a":3}');
    assert.deepEqual(source.read()?.parse(), { a: 3 }, 'an edit in place, same size');
    rmSync(path);
    assert.equal(source.read(), undefined);
  });
});

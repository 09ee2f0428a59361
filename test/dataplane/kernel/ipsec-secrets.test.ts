import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { InputError } from '../../../src/errors';
import { secretsDirectory } from '../../../src/dataplane/kernel/ipsec-secrets';

describe('IPsec secrets directory', () => {
  let dir: string;
  const secret = Buffer.alloc(32, 0x5a).toString('base64');
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'strait-secrets-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const refused = (peer: string, field: string, value: unknown, why: RegExp) =>
    assert.throws(
      () => secretsDirectory(dir).secretFor(peer),
      (e: unknown) => {
        assert.ok(e instanceof InputError, String(e));
        assert.equal(e.field, field);
        assert.deepEqual(e.value, value);
        assert.match(e.message, why);
        assert.ok(!e.message.includes(secret) && !inspect(e).includes(secret), 'the secret is not in the error');
        return true;
      },
    );

  it('reads an owner-only file named after the peer, base64 with a trailing newline', () => {
    writeFileSync(join(dir, 'cluster-a'), `${secret}\n`, { mode: 0o600 });
    assert.deepEqual(secretsDirectory(dir).secretFor('cluster-a').reveal(), Buffer.alloc(32, 0x5a));
    chmodSync(join(dir, 'cluster-a'), 0o400);
    assert.equal(secretsDirectory(dir).secretFor('cluster-a').length, 32);
  });

  it('refuses a missing file, a file others can read, a directory, a short secret and a name that is not a cluster id', () => {
    refused('cluster-a', join(dir, 'cluster-a'), 'ENOENT', /no IPsec secret for the peering with cluster-a/);
    writeFileSync(join(dir, 'cluster-a'), secret, { mode: 0o644 });
    chmodSync(join(dir, 'cluster-a'), 0o644);
    refused('cluster-a', join(dir, 'cluster-a'), 'mode 0644', /readable by its owner only/);
    mkdirSync(join(dir, 'cluster-b'));
    refused('cluster-b', join(dir, 'cluster-b'), 'not a regular file', /must be a file/);
    writeFileSync(join(dir, 'cluster-c'), Buffer.alloc(16, 1).toString('base64'), { mode: 0o600 });
    refused('cluster-c', join(dir, 'cluster-c'), '16 bytes', /at least 32 bytes/);
    refused('../etc/passwd', 'peer', '../etc/passwd', /DNS label/);
  });
});

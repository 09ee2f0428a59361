import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import pino from 'pino';
import { isSecretKey, loggerOptions, redactedValue } from '../src/log';

const secret = 'S3CR3T-VALUE';

/** A logger made as createLogger makes it, writing into `lines`. */
function capture(): { log: pino.Logger; raw: string[] } {
  const raw: string[] = [];
  return { log: pino({ ...loggerOptions, level: 'trace' }, { write: (line: string) => void raw.push(line) }), raw };
}

describe('log redaction', () => {
  it('censors a secret-named field at any depth, inside arrays, in bindings and in errors', () => {
    const { log, raw } = capture();
    const deep = (depth: number): unknown => (depth === 0 ? { key: secret, keep: 'visible' } : { level: depth, next: deep(depth - 1) });
    log.info({ a: { b: { c: { key: secret } } } }, 'depth 4');
    log.info({ tree: deep(12) }, 'depth 14');
    log.info({ peers: [{ name: 'b', psk: secret }, [{ token: secret }], { ipsec: [{ spi: 1, key: secret }] }] }, 'arrays');
    log
      .child({ peer: { peeringSecret: secret } })
      .warn({ auth: { bearerToken: secret, BEARER_TOKEN: secret, password: secret } }, 'bindings');
    log.error({ err: Object.assign(new Error('refused'), { token: secret, detail: { secret } }) }, 'error');
    log.info({ Authorization: `Bearer ${secret}`, keys: [secret], KEY: secret, 'x-api-key': secret }, 'names');
    const text = raw.join('');
    assert.equal(raw.length, 6);
    assert.ok(!text.includes(secret), `a secret reached the log:\n${text}`);
    const lines = raw.map((l) => JSON.parse(l) as Record<string, any>);
    assert.equal(lines[0]!.a.b.c.key, redactedValue);
    let node = lines[1]!.tree;
    while (node.next) node = node.next;
    assert.deepEqual(node, { key: redactedValue, keep: 'visible' });
    assert.deepEqual(lines[2]!.peers, [
      { name: 'b', psk: redactedValue },
      [{ token: redactedValue }],
      { ipsec: [{ spi: 1, key: redactedValue }] },
    ]);
    assert.equal(lines[3]!.peer.peeringSecret, redactedValue);
    assert.equal(lines[4]!.err.message, 'refused', 'an error is still logged as one');
    assert.deepEqual([lines[4]!.err.token, lines[4]!.err.detail.secret], [redactedValue, redactedValue]);
  });

  it('leaves other fields and lines as they are', () => {
    const { log, raw } = capture();
    log.info({ monkey: 'm', keyspace: 'k', tokenizer: 't', pods: [{ ip: '10.0.0.1' }], n: 3 }, 'plain');
    const line = JSON.parse(raw[0]!) as Record<string, unknown>;
    assert.deepEqual(
      [line.monkey, line.keyspace, line.tokenizer, line.pods, line.n, line.msg],
      ['m', 'k', 't', [{ ip: '10.0.0.1' }], 3, 'plain'],
    );
    for (const name of ['key', 'psk', 'secret', 'token', 'ipsecKey', 'peering_secret', 'PSK', 'secrets'])
      assert.ok(isSecretKey(name), name);
    for (const name of ['monkey', 'keyspace', 'hotkeys', 'tokenizer', 'secretary']) assert.ok(!isSecretKey(name), name);
  });

  it("keeps secrets out of a strait process's log (createLogger, stderr)", () => {
    const log = join(__dirname, '../src/log.js');
    const child = spawnSync(
      process.execPath,
      [
        '-e',
        `
      const log = require(${JSON.stringify(log)}).createLogger('test');
      log.info({ spec: { peers: [{ ipsec: { key: ${JSON.stringify(secret)} } }] } }, 'applied');
      log.info({ a: { b: { c: { key: ${JSON.stringify(secret)}, psk: ${JSON.stringify(secret)} } } } }, 'deep');
    `,
      ],
      { encoding: 'utf8', timeout: 30_000 },
    );
    assert.equal(child.status, 0, child.stderr);
    assert.equal(child.stderr.trim().split('\n').length, 2, child.stderr);
    assert.ok(!child.stderr.includes(secret), `a secret reached the log:\n${child.stderr}`);
  });
});

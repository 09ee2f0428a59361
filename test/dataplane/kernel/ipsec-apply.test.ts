import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { inspect } from 'node:util';
import pino from 'pino';
import { NetlinkError } from '../../../src/native/error';
import { StateError } from '../../../src/errors';
import { IpsecError, applyIpsec } from '../../../src/dataplane/kernel/ipsec-apply';
import { type Secret, peeringSecret } from '../../../src/dataplane/kernel/ipsec-keys';
import { type IpsecPlan, planIpsec } from '../../../src/dataplane/kernel/ipsec-plan';
import { ip } from '../../../src/kernel/command';
import { createNetns, deleteNetns } from '../../../src/kernel/netns';
import { loggerOptions } from '../../../src/log';
import { ipsecHub } from './ipsec-hub';
import { recordChildProcesses } from '../../support/child-processes';
import { requireKernel, requireRoot, uniqueName } from '../../support/kernel';

const local = '198.51.100.11';
const peerA = '203.0.113.1';
const reqidA = String(0x53540007);
const secretBytes = Buffer.alloc(32, 0x3c);
const secretA = peeringSecret('secret', secretBytes);
const encrypted = (secrets: [string, Secret][] = [['cluster-a', secretA]]) => planIpsec(ipsecHub(['cluster-a'], local), new Map(secrets));

/** `ip xfrm policy` as one normalised line per entry, parsed here independently of the code under test. */
function policyDump(ns: string): string[] {
  const entries: string[] = [];
  for (const line of ip(['xfrm', 'policy'], ns).split('\n')) {
    if (line.trim() === '') continue;
    if (/^\S/.test(line)) entries.push(line.trim());
    else entries[entries.length - 1] += ` | ${line.trim()}`;
  }
  return entries.sort();
}

const expectedPolicy = (dir: string, src: string, dst: string) => {
  const [tsrc, tdst] = dir === 'out' ? [local, peerA] : [peerA, local];
  return `src ${src} dst ${dst} | dir ${dir} priority 0 ptype main | tmpl src ${tsrc} dst ${tdst} | proto esp reqid ${reqidA} mode tunnel | if_id 0x7`;
};

function expectedPolicies(): string[] {
  const out: string[] = [];
  for (const ours of ['172.16.0.0/16', '172.17.0.0/24']) {
    for (const theirs of ['10.1.0.0/16', '10.60.0.0/24']) {
      out.push(expectedPolicy('out', ours, theirs), expectedPolicy('in', theirs, ours), expectedPolicy('fwd', theirs, ours));
    }
  }
  return out;
}

const foreignPolicy = [
  'src',
  '10.9.0.0/16',
  'dst',
  '10.8.0.0/16',
  'dir',
  'out',
  'tmpl',
  'src',
  '192.0.2.1',
  'dst',
  '192.0.2.2',
  'proto',
  'esp',
  'reqid',
  '7',
  'mode',
  'tunnel',
];
const foreignDump =
  'src 10.9.0.0/16 dst 10.8.0.0/16 | dir out priority 0 ptype main | tmpl src 192.0.2.1 dst 192.0.2.2 | proto esp reqid 7 mode tunnel';

/** A logger like createLogger's, writing every line into `lines`. */
function capturingLogger(lines: string[]) {
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return pino({ ...loggerOptions, name: 'test', level: 'trace' }, stream);
}

describe('IPsec apply (real kernel)', function () {
  requireRoot(this);
  this.timeout(60_000);
  let ns = '';

  beforeEach(() => {
    ns = uniqueName('strait-test-ipsec');
    createNetns(ns);
  });
  // Every xfrm entry of a test lives in its namespace.
  afterEach(() => void deleteNetns(ns));

  /** The policies alone, which any kernel with xfrm holds; the states need ESP (the @esp tests below). */
  const policiesOnly = (plan: IpsecPlan): IpsecPlan => ({ states: [], policies: plan.policies });

  it('installs the policies (exact selectors, dir, template, reqid), twice without change, leaving foreign ones alone', () => {
    ip(['xfrm', 'policy', 'add', ...foreignPolicy], ns);
    const plan = policiesOnly(encrypted());
    assert.deepEqual(applyIpsec(plan, { netns: ns }), { added: 12, updated: 0, removed: 0 });
    assert.deepEqual(policyDump(ns), [...expectedPolicies(), foreignDump].sort());
    assert.deepEqual(applyIpsec(plan, { netns: ns }), { added: 0, updated: 0, removed: 0 });
    assert.deepEqual(policyDump(ns), [...expectedPolicies(), foreignDump].sort());
  });

  it('puts back a policy deleted or changed by hand', () => {
    const plan = policiesOnly(encrypted());
    applyIpsec(plan, { netns: ns });
    ip(['xfrm', 'policy', 'delete', 'dir', 'fwd', 'src', '10.1.0.0/16', 'dst', '172.16.0.0/16', 'if_id', '7'], ns);
    ip(
      [
        'xfrm',
        'policy',
        'update',
        'src',
        '172.16.0.0/16',
        'dst',
        '10.1.0.0/16',
        'dir',
        'out',
        'if_id',
        '7',
        'tmpl',
        'src',
        local,
        'dst',
        '192.0.2.99',
        'proto',
        'esp',
        'reqid',
        reqidA,
        'mode',
        'tunnel',
      ],
      ns,
    );
    assert.deepEqual(applyIpsec(plan, { netns: ns }), { added: 1, updated: 1, removed: 0 });
    assert.deepEqual(policyDump(ns), expectedPolicies().sort());
  });

  it('undoes the policies it added and restores those it updated when a policy fails', () => {
    const plan = policiesOnly(encrypted());
    applyIpsec(plan, { netns: ns });
    const extra = { ...plan.policies[0]!, src: '172.18.0.0/16' };
    // The same policy twice: the second add fails (File exists) after the first and the update went in.
    const failing: IpsecPlan = {
      states: plan.states,
      policies: [{ ...plan.policies[0]!, tmplDst: '192.0.2.99' }, ...plan.policies.slice(1), extra, extra],
    };
    assert.throws(
      () => applyIpsec(failing, { netns: ns }),
      (e: unknown) => e instanceof IpsecError && /cannot install the xfrm policy.*File exists/.test(e.message),
    );
    assert.deepEqual(policyDump(ns), expectedPolicies().sort());
  });

  it('removes only its own policies when encryption is turned off', () => {
    ip(['xfrm', 'policy', 'add', ...foreignPolicy], ns);
    applyIpsec(policiesOnly(encrypted()), { netns: ns });
    assert.deepEqual(applyIpsec(encrypted([]), { netns: ns }), { added: 0, updated: 0, removed: 12 });
    assert.deepEqual(policyDump(ns), [foreignDump]);
  });

  it('refuses to take over a foreign policy with one of its selectors, changing nothing', () => {
    const taken = [
      'src',
      '172.16.0.0/16',
      'dst',
      '10.1.0.0/16',
      'dir',
      'out',
      'if_id',
      '7',
      'tmpl',
      'src',
      '192.0.2.1',
      'dst',
      '192.0.2.2',
      'proto',
      'esp',
      'reqid',
      '7',
      'mode',
      'tunnel',
    ];
    ip(['xfrm', 'policy', 'add', ...taken], ns);
    const before = policyDump(ns);
    assert.throws(
      () => applyIpsec(encrypted(), { netns: ns }),
      (e: unknown) =>
        e instanceof StateError && /peer cluster-a.*dir out src 172\.16\.0\.0\/16 dst 10\.1\.0\.0\/16.*not Strait's/.test(e.message),
    );
    assert.deepEqual(policyDump(ns), before);
  });

  /** Applies the whole plan, logging as the agent would; the error if any, and everything a log or error showed. */
  const applyCapturing = (plan: IpsecPlan): { error: unknown; seen: string } => {
    const lines: string[] = [];
    const logger = capturingLogger(lines);
    let error: unknown;
    try {
      applyIpsec(plan, { netns: ns, logger });
    } catch (err) {
      error = err;
      logger.error({ err }, 'apply failed'); // as the agent would log it
    }
    const seen = [
      ...lines,
      ...(error ? [String(error), (error as Error).stack ?? '', inspect(error, { depth: 5 }), JSON.stringify(error)] : []),
    ].join('\n');
    const secrets = [
      secretBytes.toString('hex'),
      secretBytes.toString('base64'),
      ...plan.states.map((s) => s.key.reveal().toString('hex')),
    ];
    for (const secret of secrets) assert.ok(!seen.toLowerCase().includes(secret.toLowerCase()), `key material in: ${seen}`);
    return { error, seen };
  };

  it('starts no process: the keys reach the kernel only inside netlink messages', () => {
    // With ESP the states go in; without, the kernel refuses them: either way the keys were sent.
    const { started, error } = recordChildProcesses(() => applyIpsec(encrypted(), { netns: ns }));
    assert.ok(error === undefined || error instanceof IpsecError, String(error));
    assert.deepEqual(
      started.map((c) => c.argv),
      [],
    );
  });

  it('installs the ESP states (SPI, reqid, if_id, AES-GCM), keeps them on an unchanged plan, puts back a key changed by hand, rotates keys with the secret, removes them with the policies, and logs no key @esp', async function () {
    await requireKernel(this, { has: ['esp'] });
    const plan = encrypted();
    assert.equal(applyCapturing(plan).error, undefined);
    const keyHex = (p: IpsecPlan) => p.states.map((s) => s.key.reveal().toString('hex'));
    /** `ip xfrm state`, keys of `keys` named by their index, any other 20-byte key as KEY. */
    const states = (keys: string[]) =>
      keys.reduce((text, k, i) => text.replaceAll(`0x${k}`, `KEY${i}`), ip(['xfrm', 'state'], ns)).replace(/0x[0-9a-f]{40}/g, 'KEY');
    const dump = states(keyHex(plan));
    for (const s of plan.states) {
      assert.ok(
        dump.includes(`src ${s.src} dst ${s.dst}\n\tproto esp spi 0x${s.spi.toString(16).padStart(8, '0')} reqid ${reqidA} mode tunnel`),
        dump,
      );
    }
    assert.equal((dump.match(/\tif_id 0x7\n/g) ?? []).length, 2, dump);
    assert.deepEqual(
      dump.match(/aead rfc4106\(gcm\(aes\)\) KEY\d 128/g)?.sort(),
      ['aead rfc4106(gcm(aes)) KEY0 128', 'aead rfc4106(gcm(aes)) KEY1 128'],
      dump,
    );
    assert.deepEqual(policyDump(ns), expectedPolicies().sort());
    // An unchanged plan replaces nothing: an ESP state replaced at every reconcile resets its SA.
    assert.deepEqual(applyIpsec(plan, { netns: ns }), { added: 0, updated: 0, removed: 0 });

    // The same SPI with another key (only by hand): the key read back differs, the state is replaced.
    const [first] = plan.states;
    const spi = `0x${first!.spi.toString(16).padStart(8, '0')}`;
    ip(['xfrm', 'state', 'delete', 'src', first!.src, 'dst', first!.dst, 'proto', 'esp', 'spi', spi], ns);
    ip(
      [
        'xfrm',
        'state',
        'add',
        'src',
        first!.src,
        'dst',
        first!.dst,
        'proto',
        'esp',
        'spi',
        spi,
        'reqid',
        reqidA,
        'mode',
        'tunnel',
        'if_id',
        '7',
        'aead',
        'rfc4106(gcm(aes))',
        `0x${'11'.repeat(20)}`,
        '128',
      ],
      ns,
    );
    assert.deepEqual(applyIpsec(plan, { netns: ns }), { added: 0, updated: 1, removed: 0 });
    assert.deepEqual(
      states(keyHex(plan))
        .match(/aead rfc4106\(gcm\(aes\)\) KEY\d? 128/g)
        ?.sort(),
      ['aead rfc4106(gcm(aes)) KEY0 128', 'aead rfc4106(gcm(aes)) KEY1 128'],
    );

    // A new secret: new SPIs and keys; the old states go, the policies stay.
    const rotated = encrypted([['cluster-a', peeringSecret('secret', Buffer.alloc(32, 0x5a))]]);
    assert.deepEqual(applyIpsec(rotated, { netns: ns }), { added: 2, updated: 0, removed: 2 });
    const after = states(keyHex(rotated));
    assert.deepEqual(after.match(/aead rfc4106\(gcm\(aes\)\) KEY\d? 128/g)?.sort(), [
      'aead rfc4106(gcm(aes)) KEY0 128',
      'aead rfc4106(gcm(aes)) KEY1 128',
    ]);
    assert.deepEqual(
      after.match(/spi 0x[0-9a-f]{8}/g)?.sort(),
      rotated.states.map((s) => `spi 0x${s.spi.toString(16).padStart(8, '0')}`).sort(),
    );
    assert.deepEqual(policyDump(ns), expectedPolicies().sort());

    assert.deepEqual(applyIpsec(encrypted([]), { netns: ns }), { added: 0, updated: 0, removed: 14 });
    assert.equal(ip(['xfrm', 'state'], ns).trim(), '');
    assert.deepEqual(policyDump(ns), []);
  });

  it('without ESP in the kernel, fails naming the peer and what is missing, logs no key and leaves nothing @no-esp', async function () {
    await requireKernel(this, { lacks: ['esp'] });
    const { error } = applyCapturing(encrypted());
    assert.ok(error instanceof IpsecError, String(error));
    assert.equal(error.peer, 'cluster-a');
    assert.match(error.message, /peer cluster-a.*ESP state 198\.51\.100\.11 -> 203\.0\.113\.1.*kernel lacks ESP.*strait probe --reasons/);
    // The kernel's refusal, typed: no AEAD algorithm (ENOSYS) for the first state sent.
    assert.ok(error.cause instanceof NetlinkError && error.cause.code === 'ENOSYS', inspect(error.cause));
    assert.equal(error.cause.errno, 38);
    assert.deepEqual(policyDump(ns), [], 'no policy without its states');
    assert.equal(ip(['xfrm', 'state'], ns).trim(), '');
  });
});

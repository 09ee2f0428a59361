import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { inspect } from 'node:util';
import pino from 'pino';
import { NetlinkError } from '../../../src/native/error';
import { StateError } from '../../../src/errors';
import { IpsecError, applyIpsec } from '../../../src/dataplane/kernel/ipsec-apply';
import { type Secret, peeringSecret } from '../../../src/dataplane/kernel/ipsec-keys';
import { type IpsecPlan, planIpsec } from '../../../src/dataplane/kernel/ipsec-plan';
import {
  type NodeDataplaneSpecDocument,
  type WholeNodeDataplaneSpecDocument,
  readNodeDataplaneSpec,
} from '../../../src/api/node-dataplane';
import { KernelDatapath } from '../../../src/dataplane/kernel/kernel-datapath';
import type { PeeringSecrets } from '../../../src/dataplane/kernel/ipsec-secrets';
import { encryptionRequirements } from '../../../src/probe/features';
import { ip, run } from '../../../src/kernel/command';
import { createNetns, deleteNetns } from '../../../src/kernel/netns';
import { loggerOptions } from '../../../src/log';
import { type PeerFamilies, ipsecHubCarrying, ipsecHubCarryingDocument } from './ipsec-hub';
import { ipv6Underlay, ipv6UnderlayOf } from '../../support/node-specs';
import { recordChildProcesses } from '../../support/child-processes';
import { requireKernel, requireRoot, uniqueName } from '../../support/kernel';
import { Capture, ethertypes } from '../../support/wire';
import { saPacketCounts } from '../../support/xfrm-state';

const local = '198.51.100.11';
const peerA = '203.0.113.1';
const reqidA = String(0x53540007);
const secretBytes = Buffer.alloc(32, 0x3c);
const secretA = peeringSecret('secret', secretBytes);
const encrypted = (secrets: [string, Secret][] = [['cluster-a', secretA]], families: PeerFamilies = 'ipv4') =>
  planIpsec(ipsecHubCarrying(families, local), new Map(secrets));

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

/** A's networks and ours in A's view, by family (ipsec-hub.ts: withIpv6's in IPv6). */
const wireNetworks = {
  4: { ours: ['172.16.0.0/16', '172.17.0.0/24'], theirs: ['10.1.0.0/16', '10.60.0.0/24'] },
  6: { ours: ['fd01:16::/56', 'fd01:17::/120'], theirs: ['fd00:11::/56', 'fd00:60::/120'] },
} as const;
const familiesOf: Record<PeerFamilies, (4 | 6)[]> = { ipv4: [4], dual: [4, 6], ipv6: [6] };

/** The policies of an encrypted peering with A carrying `families`, as `ip xfrm policy` shows them. */
function expectedPolicies(families: PeerFamilies = 'ipv4'): string[] {
  const out: string[] = [];
  for (const family of familiesOf[families]) {
    for (const ours of wireNetworks[family].ours) {
      for (const theirs of wireNetworks[family].theirs) {
        out.push(expectedPolicy('out', ours, theirs), expectedPolicy('in', theirs, ours), expectedPolicy('fwd', theirs, ours));
      }
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

  for (const [families, count] of [
    ['ipv4', 12],
    ['dual', 24],
    ['ipv6', 12],
  ] as const) {
    it(`installs the policies of a peering carrying ${families} (exact selectors of each family, dir, IPv4 template, reqid), twice without change, leaving foreign ones alone`, () => {
      ip(['xfrm', 'policy', 'add', ...foreignPolicy], ns);
      const plan = policiesOnly(encrypted(undefined, families));
      assert.deepEqual(applyIpsec(plan, { netns: ns }), { added: count, updated: 0, removed: 0 });
      assert.deepEqual(policyDump(ns), [...expectedPolicies(families), foreignDump].sort());
      // What another process (a restarted agent) reads and adopts: nothing to change.
      assert.deepEqual(applyIpsec(plan, { netns: ns }), { added: 0, updated: 0, removed: 0 });
      assert.deepEqual(policyDump(ns), [...expectedPolicies(families), foreignDump].sort());
    });
  }

  it("follows the peering's families: IPv6 added beside IPv4, IPv4 removed, IPv6 removed, each leaving no policy of a family it lacks", () => {
    const apply = (families: PeerFamilies) => applyIpsec(policiesOnly(encrypted(undefined, families)), { netns: ns });
    assert.deepEqual(apply('ipv4'), { added: 12, updated: 0, removed: 0 });
    assert.deepEqual(apply('dual'), { added: 12, updated: 0, removed: 0 });
    assert.deepEqual(policyDump(ns), expectedPolicies('dual').sort());
    assert.deepEqual(apply('ipv6'), { added: 0, updated: 0, removed: 12 });
    assert.deepEqual(policyDump(ns), expectedPolicies('ipv6').sort());
    assert.deepEqual(apply('dual'), { added: 12, updated: 0, removed: 0 });
    assert.deepEqual(apply('ipv4'), { added: 0, updated: 0, removed: 12 });
    assert.deepEqual(policyDump(ns), expectedPolicies('ipv4').sort());
    assert.ok(!ip(['xfrm', 'policy'], ns).includes('fd0'), 'no IPv6 selector left');
  });

  it('puts back an IPv6 policy deleted or changed by hand', () => {
    const plan = policiesOnly(encrypted(undefined, 'dual'));
    applyIpsec(plan, { netns: ns });
    ip(['xfrm', 'policy', 'delete', 'dir', 'in', 'src', 'fd00:60::/120', 'dst', 'fd01:17::/120', 'if_id', '7'], ns);
    const tmpl = ['tmpl', 'src', local, 'dst', '192.0.2.99', 'proto', 'esp', 'reqid', reqidA, 'mode', 'tunnel'];
    ip(['xfrm', 'policy', 'update', 'src', 'fd01:16::/56', 'dst', 'fd00:11::/56', 'dir', 'out', 'if_id', '7', ...tmpl], ns);
    assert.deepEqual(applyIpsec(plan, { netns: ns }), { added: 1, updated: 1, removed: 0 });
    assert.deepEqual(policyDump(ns), expectedPolicies('dual').sort());
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

  for (const [families, policyCount] of [
    ['ipv4', 12],
    ['dual', 24],
  ] as const) {
    it(`installs the ESP states of a peering carrying ${families} (SPI, reqid, if_id, AES-GCM, af-unspec), keeps them on an unchanged plan, replaces one without af-unspec or with a key changed by hand, rotates keys with the secret, removes them with the policies, and logs no key @esp`, async function () {
      await requireKernel(this, { has: ['esp'] });
      const plan = encrypted(undefined, families);
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
      // No selector family: the one pair of IPv4 states carries IPv6 inner packets as well.
      assert.equal((dump.match(/ flag af-unspec\n/g) ?? []).length, 2, dump);
      assert.deepEqual(
        dump.match(/aead rfc4106\(gcm\(aes\)\) KEY\d 128/g)?.sort(),
        ['aead rfc4106(gcm(aes)) KEY0 128', 'aead rfc4106(gcm(aes)) KEY1 128'],
        dump,
      );
      assert.deepEqual(policyDump(ns), expectedPolicies(families).sort());
      // An unchanged plan replaces nothing: an ESP state replaced at every reconcile resets its SA.
      assert.deepEqual(applyIpsec(plan, { netns: ns }), { added: 0, updated: 0, removed: 0 });

      const [first] = plan.states;
      const spi = `0x${first!.spi.toString(16).padStart(8, '0')}`;
      const addByHand = (key: string) =>
        ip(
          [
            ...[
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
            ],
            ...['if_id', '7', 'aead', 'rfc4106(gcm(aes))', `0x${key}`, '128'],
          ],
          ns,
        );
      // The state as an earlier release installed it, the same key without af-unspec: replaced once, then kept.
      ip(['xfrm', 'state', 'delete', 'src', first!.src, 'dst', first!.dst, 'proto', 'esp', 'spi', spi], ns);
      addByHand(first!.key.reveal().toString('hex'));
      assert.equal((ip(['xfrm', 'state'], ns).match(/ flag af-unspec\n/g) ?? []).length, 1);
      assert.deepEqual(applyIpsec(plan, { netns: ns }), { added: 0, updated: 1, removed: 0 });
      assert.equal((ip(['xfrm', 'state'], ns).match(/ flag af-unspec\n/g) ?? []).length, 2);
      assert.deepEqual(applyIpsec(plan, { netns: ns }), { added: 0, updated: 0, removed: 0 });

      // The same SPI with another key (only by hand): the key read back differs, the state is replaced.
      ip(['xfrm', 'state', 'delete', 'src', first!.src, 'dst', first!.dst, 'proto', 'esp', 'spi', spi], ns);
      addByHand('11'.repeat(20));
      assert.deepEqual(applyIpsec(plan, { netns: ns }), { added: 0, updated: 1, removed: 0 });
      assert.deepEqual(
        states(keyHex(plan))
          .match(/aead rfc4106\(gcm\(aes\)\) KEY\d? 128/g)
          ?.sort(),
        ['aead rfc4106(gcm(aes)) KEY0 128', 'aead rfc4106(gcm(aes)) KEY1 128'],
      );

      // A new secret: new SPIs and keys; the old states go, the policies stay.
      const rotated = encrypted([['cluster-a', peeringSecret('secret', Buffer.alloc(32, 0x5a))]], families);
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
      assert.deepEqual(policyDump(ns), expectedPolicies(families).sort());

      assert.deepEqual(applyIpsec(encrypted([], families), { netns: ns }), { added: 0, updated: 0, removed: 2 + policyCount });
      assert.equal(ip(['xfrm', 'state'], ns).trim(), '');
      assert.deepEqual(policyDump(ns), []);
    });
  }

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

/** A TCP echo on `::` (both families): the client's address as it reached us, a line, then every byte it sent. */
const echoServer = `
require('node:net').createServer((c) => { c.write(c.remoteAddress.replace(/^::ffff:/, '') + '\\n'); c.pipe(c); })
  .listen(7000, '::', () => console.log('ready'));`;

/** Sends argv[3] bytes to argv[2]:7000 (`node - TARGET SIZE`) and checks they all come back; prints who the server saw and the byte count. */
const echoClient = `
const [target, size] = [process.argv[2], Number(process.argv[3])];
const sent = require('node:crypto').randomBytes(size);
setTimeout(() => { console.error('no whole echo from ' + target + ' in 20 s'); process.exit(1); }, 20000);
const c = require('node:net').connect({ host: target, port: 7000 }, () => c.end(sent));
const got = [];
c.on('data', (d) => got.push(d)).on('end', () => {
  const all = Buffer.concat(got), nl = all.indexOf(10);
  const echoed = all.subarray(nl + 1);
  console.log(JSON.stringify({ seenAs: all.subarray(0, nl).toString(), bytes: echoed.length, same: echoed.equals(sent) }));
  process.exit(0);
});`;

/** A's gateway spec: cluster-a not remapped by B (its views of itself are its own networks), B as A sees it (ipsec-hub.ts). */
const aGatewayDocument = (): WholeNodeDataplaneSpecDocument => ({
  clusterId: 'cluster-a',
  podCIDR: '10.1.0.0/16',
  externalCIDR: '10.60.0.0/24',
  transitAddress: '10.60.0.254',
  secondary: { podCIDR: 'fd00:11::/56', externalCIDR: 'fd00:60::/120', transitAddress: 'fd00:60::fe' },
  node: { name: 'a-gw', role: 'gateway', underlayAddress: peerA },
  activeGateway: { name: 'a-gw', underlayAddress: peerA },
  overlay: { vni: 18952, port: 4789, mac: '02:53:54:00:00:0a' },
  peers: [
    {
      clusterId: 'cluster-b',
      peerId: 3,
      remotePodCIDR: '172.16.0.0/16',
      remoteExternalCIDR: '172.17.0.0/24',
      localNATPodCIDR: '10.1.0.0/16',
      localNATExternalCIDR: '10.60.0.0/24',
      endpoint: { address: local, port: 4789 },
      transport: 'ipsec',
      secondary: {
        remotePodCIDR: 'fd01:16::/56',
        remoteExternalCIDR: 'fd01:17::/120',
        localNATPodCIDR: 'fd00:11::/56',
        localNATExternalCIDR: 'fd00:60::/120',
      },
    },
  ],
  natMappings: [],
  nodes: [{ name: 'a-gw', underlayAddress: peerA, podCIDRs: ['10.1.0.0/24', 'fd00:11::/64'] }],
});

/** What crossed the wire between the gateways: ESP (over either family), and any frame that carries a pod's address in the clear. */
function classify(frames: Buffer[]): { esp: number; clear4: number; clear6: number } {
  const counts = { esp: 0, clear4: 0, clear6: 0 };
  // Pods, their views, NAT and ExternalCIDRs: 10/8 and 172.16/12 in IPv4, fd00::/8 in IPv6.
  const podV4 = (a: number) => a >>> 24 === 10 || a >>> 20 === (172 << 4) + 1;
  for (const f of frames) {
    const type = f.readUInt16BE(12);
    if (type === ethertypes.ipv4) {
      if (f[14 + 9] === 50) counts.esp++;
      else if (podV4(f.readUInt32BE(14 + 12)) || podV4(f.readUInt32BE(14 + 16))) counts.clear4++;
    } else if (type === ethertypes.ipv6) {
      if (f[14 + 6] === 50) counts.esp++;
      else if (f[14 + 8] === 0xfd || f[14 + 24] === 0xfd) counts.clear6++;
    }
  }
  return counts;
}

/*
 * Two fallback gateways, each programmed whole by KernelDatapath (xfrm interface, states and policies,
 * table 18952 and rules, NAT, MSS), with a pod behind each and a router between them, where the test
 * watches every frame:
 *
 *   podA (10.1.0.5, fd00:11::5) ── gwA (cluster-a, 203.0.113.1) ── wire ── gwB (cluster-b, hub: public
 *   198.51.100.11) ── podB (10.0.0.5, fd00:10::5; A sees it as 172.16.0.5, fd01:16::5)
 *
 * The peering is dual-stack and encrypted: IPv4 and IPv6 cross the underlay inside ESP, an IPv4 one and
 * an IPv6 one (every underlay address above as its twin in 2001:db8::/32, the states' outer addresses too).
 */
for (const underlay of [4, 6] as const)
  describe(`IPsec between two fallback gateways over an IPv${underlay} underlay: each family encrypted end to end (real kernel with ESP) @esp @vm-6.1-only`, function () {
    requireRoot(this);
    /** An underlay address of this run's family (an IPv4 one's twin in 2001:db8::/32: test/support/node-specs.ts). */
    const u = (address: string) => (underlay === 4 ? address : ipv6UnderlayOf(address));
    const subnet = underlay === 4 ? 24 : 112;
    this.timeout(300_000);
    const names = { podA: '', gwA: '', wire: '', gwB: '', podB: '' };
    const secrets: PeeringSecrets = { source: 'test', secretFor: () => peeringSecret('secret', secretBytes), version: () => '1' };
    let server: ChildProcess | undefined;

    const cleanup = () => {
      server?.kill();
      for (const ns of Object.values(names)) if (ns) deleteNetns(ns);
    };

    before(async function () {
      await requireKernel(this, { has: [...encryptionRequirements] });
      try {
        for (const key of Object.keys(names) as (keyof typeof names)[]) {
          const ns = (names[key] = uniqueName(`strait-ipsec-${key}`));
          createNetns(ns);
          run(['ip', 'netns', 'exec', ns, 'sysctl', '-qw', 'net.ipv6.conf.default.accept_dad=0', 'net.ipv6.conf.all.accept_dad=0']);
          ip(['link', 'set', 'lo', 'up'], ns);
        }
        const { podA, gwA, wire, gwB, podB } = names;
        for (const ns of [gwA, wire, gwB])
          run(['ip', 'netns', 'exec', ns, 'sysctl', '-qw', 'net.ipv4.ip_forward=1', 'net.ipv6.conf.all.forwarding=1']);
        const link = (a: string, aDev: string, b: string, bDev: string) => {
          ip(['link', 'add', aDev, 'type', 'veth', 'peer', 'name', bDev, 'netns', b], a);
          ip(['link', 'set', aDev, 'up'], a);
          ip(['link', 'set', bDev, 'up'], b);
        };
        link(gwB, 'underlay', wire, 'tob');
        link(gwA, 'underlay', wire, 'toa');
        link(gwB, 'pod0', podB, 'eth0');
        link(gwA, 'pod0', podA, 'eth0');
        for (const [ns, dev, address] of [
          [gwB, 'underlay', `${u(local)}/${subnet}`],
          [gwB, 'lo', `${u('192.0.2.11')}/${underlay === 4 ? 32 : 128}`],
          [wire, 'tob', `${u('198.51.100.1')}/${subnet}`],
          [wire, 'toa', `${u('203.0.113.254')}/${subnet}`],
          [gwA, 'underlay', `${u(peerA)}/${subnet}`],
          [gwB, 'pod0', '10.0.0.1/24'],
          [gwB, 'pod0', 'fd00:10::1/64'],
          [podB, 'eth0', '10.0.0.5/24'],
          [podB, 'eth0', 'fd00:10::5/64'],
          [gwA, 'pod0', '10.1.0.1/24'],
          [gwA, 'pod0', 'fd00:11::1/64'],
          [podA, 'eth0', '10.1.0.5/24'],
          [podA, 'eth0', 'fd00:11::5/64'],
        ] as const)
          ip(['addr', 'add', address, 'dev', dev], ns);
        ip([`-${underlay}`, 'route', 'add', 'default', 'via', u('198.51.100.1')], gwB);
        ip([`-${underlay}`, 'route', 'add', 'default', 'via', u('203.0.113.254')], gwA);
        for (const [ns, v4, v6] of [
          [podB, '10.0.0.1', 'fd00:10::1'],
          [podA, '10.1.0.1', 'fd00:11::1'],
        ] as const) {
          ip(['route', 'add', 'default', 'via', v4], ns);
          ip(['-6', 'route', 'add', 'default', 'via', v6], ns);
        }
        const over = <T extends NodeDataplaneSpecDocument>(doc: T) => (underlay === 4 ? doc : ipv6Underlay(doc));
        for (const [ns, spec] of [
          [gwB, readNodeDataplaneSpec(over(ipsecHubCarryingDocument('dual', local)))],
          [gwA, readNodeDataplaneSpec(over(aGatewayDocument()))],
        ] as const) {
          const result = new KernelDatapath(ns, { secrets }).apply(spec);
          assert.deepEqual([result.failed, result.blocked], [[], []], ns);
          assert.equal(result.ipsec.added, 2 + 24, `${ns}: two states, 12 policies per family`);
        }
        server = spawn('ip', ['netns', 'exec', podB, process.execPath, '-e', echoServer], { stdio: ['ignore', 'pipe', 'inherit'] });
        await new Promise<void>((resolve, reject) => {
          server!.once('exit', (code) => reject(new Error(`echo server exited (${code})`)));
          server!.stdout!.once('data', () => resolve());
        });
      } catch (err) {
        cleanup();
        throw err;
      }
    });
    after(cleanup);

    const states = (ns: string) => ip(['-s', 'xfrm', 'state'], ns);

    it('installs states that carry either inner family (af-unspec), the same pair for both families', () => {
      for (const ns of [names.gwA, names.gwB]) {
        const text = states(ns);
        assert.equal((text.match(/flag af-unspec/g) ?? []).length, 2, text);
        assert.equal(saPacketCounts(text).length, 2);
      }
    });

    for (const [family, target, podA, size] of [
      [4, '172.16.0.5', '10.1.0.5', 200_000],
      [6, 'fd01:16::5', 'fd00:11::5', 200_000],
    ] as const) {
      it(`carries IPv${family} ping and TCP (${size} bytes each way, segments larger than the tunnel's MTU) between the pods, only as ESP on the wire`, async () => {
        const before = saPacketCounts(states(names.gwB));
        const captures = await Promise.all(['tob', 'toa'].map((dev) => Capture.start(names.wire, dev, ethertypes.all)));
        let frames: Buffer[] = [];
        try {
          run(['ip', 'netns', 'exec', names.podA, 'ping', `-${family}`, '-c', '3', '-i', '0.2', '-W', '2', '-I', podA, target]);
          const echo = JSON.parse(
            run(['ip', 'netns', 'exec', names.podA, process.execPath, '-', target, String(size)], echoClient),
          ) as unknown;
          // B's pod sees A's pod by its own address: A's networks are not remapped in B.
          assert.deepEqual(echo, { seenAs: podA, bytes: size, same: true });
        } finally {
          frames = (await Promise.all(captures.map((c) => c.stop()))).flat();
        }
        const wire = classify(frames);
        process.stdout.write(
          `      IPv${family}: on the wire ${wire.esp} ESP, ${wire.clear4} IPv4 and ${wire.clear6} IPv6 pod packets in the clear\n`,
        );
        assert.ok(wire.esp >= 6 + size / 1500, `ESP on the wire: ${wire.esp}`);
        assert.deepEqual([wire.clear4, wire.clear6], [0, 0], 'no pod packet of either family in the clear');
        const after = saPacketCounts(states(names.gwB));
        assert.ok(
          after.every((n, i) => n - before[i]! >= 3 + size / 1420),
          `B's SAs carried the traffic both ways: ${before.join(', ')} -> ${after.join(', ')}`,
        );
      });
    }
  });

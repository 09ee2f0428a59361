import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chooseDataplane, featureNames, missingFor, type ProbeReport } from '../../src/probe/features';
import { probeKernel } from '../../src/probe/probe';
import { ip, run } from '../../src/kernel/command';
import { createNetns, deleteNetns } from '../../src/kernel/netns';
import { requireKernel, requireRoot, uniqueName } from '../support/kernel';

const cli = join(__dirname, '..', '..', 'src', 'cli', 'main.js');

const report = (missing: string[]): ProbeReport => ({
  features: Object.fromEntries(featureNames.map((f) => [f, !missing.includes(f)])) as ProbeReport['features'],
  reasons: {},
});

describe('dataplane choice', () => {
  it('picks eBPF only when every eBPF requirement is there', () => {
    assert.equal(chooseDataplane(report([])), 'ebpf');
    assert.equal(chooseDataplane(report(['esp', 'xfrm'])), 'ebpf');
    assert.equal(chooseDataplane(report(['tcx'])), 'ebpf', 'clsact is enough');
    assert.equal(chooseDataplane(report(['tcx', 'clsact'])), 'kernel');
    for (const f of ['bpf', 'btf', 'lpmTrie', 'vxlanCollectMd']) assert.equal(chooseDataplane(report([f])), 'kernel', f);
    assert.deepEqual(missingFor('kernel', report(['nftables'])), ['nftables']);
  });
});

describe('strait probe (real kernel)', function () {
  requireRoot(this);
  this.timeout(60_000);
  // The probe works in the namespace it runs in: here one made for the test, not the host's.
  let ns: string;
  beforeEach(() => {
    ns = uniqueName('strait-test-probe');
    createNetns(ns);
  });
  afterEach(() => deleteNetns(ns));

  const probe = (...args: string[]) =>
    JSON.parse(execFileSync('ip', ['netns', 'exec', ns, process.execPath, cli, 'probe', '--json', ...args], { encoding: 'utf8' }));
  /** What a probe could leave in the namespace: devices, rules, nftables tables, xfrm states and policies. */
  const leftovers = () => ({
    links: run(['ip', '-n', ns, '-o', 'link', 'show'])
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => l.split(': ')[1]),
    rules: run(['ip', '-n', ns, 'rule', 'list']),
    nft: run(['ip', 'netns', 'exec', ns, 'nft', 'list', 'ruleset']),
    xfrm: run(['ip', '-n', ns, 'xfrm', 'state', 'list']) + run(['ip', '-n', ns, 'xfrm', 'policy', 'list']),
  });

  it('prints one JSON object with a boolean per feature, found by trying, and leaves nothing in the namespace', () => {
    const before = leftovers();
    assert.deepEqual(before.links, ['lo']);
    const out = probe() as Record<string, unknown>;
    // The features and their order as the README documents them.
    assert.deepEqual(Object.keys(out), [
      'bpf',
      'btf',
      'clsact',
      'tcx',
      'testRun',
      'lpmTrie',
      'vxlan',
      'vxlanCollectMd',
      'policyRouting',
      'nftables',
      'xfrm',
      'esp',
      'xfrmInterface',
    ]);
    for (const [f, present] of Object.entries(out)) assert.equal(typeof present, 'boolean', f);
    // What every kernel that runs these tests has (the binding tests use all of it).
    for (const f of ['bpf', 'btf', 'clsact', 'testRun', 'lpmTrie', 'vxlan', 'vxlanCollectMd', 'policyRouting', 'nftables', 'xfrm'])
      assert.equal(out[f], true, f);
    assert.deepEqual(leftovers(), before);
  });

  it("finds the collect_md mode when another device holds the probe's port in it, and leaves that device alone", () => {
    ip(['link', 'add', 'other-md', 'type', 'vxlan', 'dstport', '4790', 'external'], ns);
    const before = leftovers();
    const out = probe('--reasons') as { vxlanCollectMd: boolean; reasons: Record<string, string> };
    assert.equal(out.vxlanCollectMd, true, out.reasons.vxlanCollectMd);
    assert.deepEqual(leftovers(), before);
  });

  it('explains what is missing with --reasons', () => {
    const out = probe('--reasons') as {
      reasons: Record<string, string>;
      dataplane: string;
      esp: boolean;
      xfrm: boolean;
      xfrmInterface: boolean;
      encryption: boolean;
    };
    assert.equal(out.dataplane, 'ebpf');
    // The kernel's own words (this kernel: "ENOSYS (Function not implemented): Requested AEAD algorithm not found"), not the operation.
    if (!out.esp) assert.ok(out.reasons.esp && !/xfrm state add|0x1111/.test(out.reasons.esp), out.reasons.esp);
    assert.equal(out.encryption, out.xfrm && out.esp && out.xfrmInterface);
    for (const [f, why] of Object.entries(out.reasons))
      assert.equal(out[f as 'esp'], false, `${f} has a reason (${why}) but is reported present`);
  });

  it('tries every feature in process, starting no program: with PATH leading nowhere, it still finds them all', async () => {
    const path = process.env.PATH;
    // A directory that does not exist: any ip or nft the probe started would fail with ENOENT.
    process.env.PATH = join(tmpdir(), uniqueName('strait-test-no-programs'));
    let found: ProbeReport;
    try {
      found = await probeKernel(ns);
    } finally {
      process.env.PATH = path;
    }
    for (const f of [
      'bpf',
      'btf',
      'clsact',
      'tcx',
      'testRun',
      'lpmTrie',
      'vxlan',
      'vxlanCollectMd',
      'policyRouting',
      'nftables',
      'xfrm',
    ] as const) {
      assert.equal(found.features[f], true, `${f}: ${found.reasons[f]}`);
    }
    for (const [f, why] of Object.entries(found.reasons)) assert.doesNotMatch(why, /ENOENT|spawn/, f);
  });

  it("gives the kernel's own words for a missing feature: ESP refused with its errno and the kernel's message @no-esp", async function () {
    await requireKernel(this, { lacks: ['esp'] });
    const found = await probeKernel(ns);
    assert.equal(found.features.esp, false);
    assert.equal(found.reasons.esp, 'ENOSYS (Function not implemented): Requested AEAD algorithm not found');
  });
});

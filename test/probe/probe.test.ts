import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { chooseDataplane, featureNames, missingFor, type ProbeReport } from '../../src/probe/features';
import { run } from '../../src/kernel/command';
import { createNetns, deleteNetns } from '../../src/kernel/netns';
import { requireRoot } from '../support/kernel';

const cli = join(__dirname, '..', '..', 'src', 'cli', 'main.js');
const netnsList = () => run(['ip', 'netns', 'list']).split('\n').filter((l) => l.startsWith('strait-probe-'));

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

  it('prints one JSON object with a boolean per feature, found by trying, and leaves no namespace', () => {
    const out = JSON.parse(execFileSync(process.execPath, [cli, 'probe', '--json'], { encoding: 'utf8' })) as Record<string, unknown>;
    // The features and their order as the README documents them.
    assert.deepEqual(Object.keys(out), ['bpf', 'btf', 'clsact', 'tcx', 'testRun', 'lpmTrie',
      'vxlan', 'vxlanCollectMd', 'policyRouting', 'nftables', 'xfrm', 'esp', 'xfrmInterface']);
    for (const [f, present] of Object.entries(out)) assert.equal(typeof present, 'boolean', f);
    // What every kernel that runs these tests has (the binding tests use all of it).
    for (const f of ['bpf', 'btf', 'clsact', 'testRun', 'lpmTrie', 'vxlan', 'policyRouting', 'nftables', 'xfrm']) assert.equal(out[f], true, f);
    assert.deepEqual(netnsList(), []);
  });

  it("deletes the throw-away namespace a killed probe left, and only those of processes that are gone", () => {
    // A pid no process has (above the largest a Linux pid can be), and ours, which is alive.
    const dead = 'strait-probe-4194305-abcdef';
    const alive = `strait-probe-${process.pid}-fedcba`;
    for (const ns of [dead, alive]) createNetns(ns);
    try {
      execFileSync(process.execPath, [cli, 'probe', '--json'], { encoding: 'utf8' });
      assert.deepEqual(netnsList(), [alive]);
    } finally {
      for (const ns of [dead, alive]) deleteNetns(ns);
    }
  });

  it('explains what is missing with --reasons', () => {
    const out = JSON.parse(execFileSync(process.execPath, [cli, 'probe', '--json', '--reasons'], { encoding: 'utf8' })) as { reasons: Record<string, string>; dataplane: string; esp: boolean; xfrm: boolean; xfrmInterface: boolean; encryption: boolean };
    assert.equal(out.dataplane, 'ebpf');
    // The kernel's own words (this kernel: "Requested AEAD algorithm not found"), not the command line.
    if (!out.esp) assert.ok(out.reasons.esp && !/xfrm state add|0x1111/.test(out.reasons.esp), out.reasons.esp);
    assert.equal(out.encryption, out.xfrm && out.esp && out.xfrmInterface);
    for (const [f, why] of Object.entries(out.reasons)) assert.equal(out[f as 'esp'], false, `${f} has a reason (${why}) but is reported present`);
  });
});

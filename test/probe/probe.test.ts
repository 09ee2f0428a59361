import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Feature, type ProbeReport, carries, chooseDataplane, featureNames, missingFor } from '../../src/probe/features';
import { natProbeRuleset, probeKernel } from '../../src/probe/probe';
import { probeText } from '../../src/probe/report';
import { ip, run } from '../../src/kernel/command';
import { runNft } from '../../src/kernel/nftables';
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

  it('needs for IPv6 what IPv4 needs and the IPv6 twins of the family features, and never picks the dataplane by IPv6', () => {
    assert.deepEqual(missingFor('ebpf', report(['lpmTrie6', 'routes6']), 6), ['lpmTrie6', 'routes6']);
    assert.deepEqual(missingFor('ebpf', report(['lpmTrie6', 'routes6'])), [], 'IPv4 is carried without them');
    assert.equal(chooseDataplane(report(['lpmTrie6'])), 'ebpf');
    assert.deepEqual(missingFor('ebpf', report(['lpmTrie']), 6), ['lpmTrie'], 'IPv6 is the secondary family, beside IPv4');
    assert.deepEqual(missingFor('kernel', report(['policyRouting6', 'nftables6', 'xfrm6', 'esp6']), 6), ['policyRouting6', 'nftables6']);
    assert.deepEqual(missingFor('kernel', report(['policyRouting6', 'nftables6'])), []);
  });

  it("tells IPsec's carriage per family: IPv6 selectors need xfrm6, the tunnel's ESP states are IPv4's", () => {
    assert.deepEqual(carries(report(['esp6']), 'ipsec', 4), { carries: true, lacks: [] });
    assert.deepEqual(carries(report(['xfrm6', 'esp6']), 'ipsec', 4), { carries: true, lacks: [] });
    assert.deepEqual(carries(report(['xfrm6', 'esp', 'esp6']), 'ipsec', 6), { carries: false, lacks: ['xfrm6', 'esp'] });
    assert.deepEqual(carries(report(['esp6']), 'ipsec', 6), { carries: true, lacks: [] }, 'IPv6 inside the IPv4 tunnel: no IPv6 ESP state');
    assert.deepEqual(carries(report(['xfrmInterface']), 'ipsec', 6), { carries: false, lacks: ['xfrmInterface'] });
    assert.deepEqual(carries(report(['xfrm']), 'ipsec', 6), { carries: false, lacks: ['xfrm'] }, 'beside IPv4, as the secondary family');
    assert.deepEqual(carries(report([]), 'kernel', 6), { carries: true, lacks: [] });
  });

  it('prints each family feature in a column per family, with the reason of each family that lacks it, and what carries each family', () => {
    const lacking = report(['policyRouting6', 'esp', 'esp6', 'xfrmInterface']);
    lacking.reasons = { policyRouting6: 'EAFNOSUPPORT (Address family not supported by protocol)', esp: 'ENOSYS (a)', esp6: 'ENOSYS (b)' };
    const text = probeText(lacking);
    assert.match(text, /^both families\n {2}bpf {13}yes {2}bpf\(2\) syscall: create a map$/m);
    assert.match(text, /^per family {8}IPv4 {2}IPv6$/m);
    assert.match(
      text,
      /^ {2}policyRouting {3}yes {3}no {4}the family's policy rules .*\n {18}IPv6: EAFNOSUPPORT \(Address family not supported by protocol\)$/m,
    );
    assert.match(text, /^ {2}esp {13}no {4}no {4}.*\n {18}IPv4: ENOSYS \(a\)\n {18}IPv6: ENOSYS \(b\)$/m);
    assert.match(text, /^ {2}xfrmInterface {3}no {3}xfrm interfaces/m);
    assert.match(text, /^ {2}kernel fallback {2}IPv4 {2}yes$/m);
    assert.match(text, /^ {2}kernel fallback {2}IPv6 {2}no \(lacks: policyRouting6\)$/m);
    assert.match(text, /^ {2}eBPF datapath {4}IPv6 {2}yes$/m);
    assert.match(text, /^ {2}IPsec peerings {3}IPv4 {2}no \(lacks: esp, xfrmInterface\)$/m);
    assert.match(text, /^ {2}IPsec peerings {3}IPv6 {2}no \(lacks: esp, xfrmInterface\)$/m);
    assert.match(probeText(report(['esp6'])), /^ {2}IPsec peerings {3}IPv6 {2}yes$/m);
    assert.match(text, /^dataplane \(auto\): ebpf$/m);
    assert.match(text, /^encryption \(IPsec peerings\): no \(lacks: esp \(ENOSYS \(a\)\), xfrmInterface\)$/m);
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
    rules: run(['ip', '-n', ns, 'rule', 'list']) + run(['ip', '-n', ns, '-6', 'rule', 'list']),
    nft: run(['ip', 'netns', 'exec', ns, 'nft', 'list', 'ruleset']),
    xfrm: run(['ip', '-n', ns, 'xfrm', 'state', 'list']) + run(['ip', '-n', ns, 'xfrm', 'policy', 'list']),
  });

  /** The features and their order as docs/cli.md documents them (the paragraph on `strait probe --json`). */
  const documented = (() => {
    const text = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'cli.md'), 'utf8');
    const list = /`strait probe --json` prints one object with a boolean per feature \(([^:]*):/.exec(text)?.[1];
    assert.ok(list, "docs/cli.md lists strait probe --json's features");
    return [...list.matchAll(/`(\w+)`/g)].map(([, name]) => name!);
  })();
  /** What every kernel that runs these tests has (the binding tests use all of it), in each family: all but tcx (6.6) and IPsec's. */
  const everyKernelHas: Feature[] = featureNames.filter((f) => !['tcx', 'esp', 'esp6', 'xfrmInterface'].includes(f));

  it('prints one JSON object with a boolean per feature, each family feature for IPv4 and IPv6, found by trying, and leaves nothing in the namespace', () => {
    const before = leftovers();
    assert.deepEqual(before.links, ['lo']);
    const out = probe() as Record<string, unknown>;
    assert.deepEqual(Object.keys(out), documented);
    for (const [f, present] of Object.entries(out)) assert.equal(typeof present, 'boolean', f);
    for (const f of everyKernelHas) assert.equal(out[f], true, f);
    assert.deepEqual(leftovers(), before);
  });

  it('says with --reasons what carries each family, and the same ESP answer for both families', () => {
    const out = probe('--reasons') as Record<string, unknown> & {
      reasons: Record<string, string>;
      families: Record<'ipv4' | 'ipv6', Record<'ebpf' | 'kernel' | 'ipsec', { carries: boolean; lacks: string[]; notYet?: string }>>;
    };
    assert.deepEqual(Object.keys(out.families), ['ipv4', 'ipv6']);
    for (const family of ['ipv4', 'ipv6'] as const) {
      assert.deepEqual(out.families[family].ebpf, { carries: true, lacks: [] }, family);
      assert.deepEqual(out.families[family].kernel, { carries: true, lacks: [] }, family);
    }
    assert.equal(out.families.ipv4.ipsec.carries, out.encryption);
    // IPv6 rides the IPv4 ESP tunnel: the same answer as IPv4 wherever xfrm6 is there, as on every kernel that runs these tests.
    assert.equal(out.xfrm6, true);
    assert.deepEqual(out.families.ipv6.ipsec, out.families.ipv4.ipsec);
    // ESP is an algorithm of the kernel's, not of a family: both or neither (this kernel: neither, ENOSYS).
    assert.equal(out.esp6, out.esp);
    if (!out.esp) assert.equal(out.reasons.esp6, out.reasons.esp);
  });

  it('checks a NAT ruleset of each family that the kernel takes as it is when applied for real', () => {
    for (const [family, listed] of [
      [4, /snat ip prefix to ip saddr map \{ 192\.0\.2\.0\/25 : 198\.51\.100\.0\/25 \}/],
      [6, /snat ip6 prefix to ip6 saddr map \{ 2001:db8::\/64 : 2001:db8:2::\/64 \}/],
    ] as const) {
      runNft(natProbeRuleset(family), ns);
      const ruleset = run(['ip', 'netns', 'exec', ns, 'nft', 'list', 'table', family === 4 ? 'ip' : 'ip6', 'strait_probe']);
      assert.match(ruleset, listed);
      assert.match(ruleset, /dnat (ip6 )?to ip6? daddr map @m/);
    }
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
    for (const f of [...everyKernelHas, 'tcx' as const]) {
      assert.equal(found.features[f], true, `${f}: ${found.reasons[f]}`);
    }
    for (const [f, why] of Object.entries(found.reasons)) assert.doesNotMatch(why, /ENOENT|spawn/, f);
  });

  it("gives the kernel's own words for a missing feature: ESP refused with its errno and the kernel's message @no-esp", async function () {
    await requireKernel(this, { lacks: ['esp'] });
    const found = await probeKernel(ns);
    assert.equal(found.features.esp, false);
    assert.equal(found.reasons.esp, 'ENOSYS (Function not implemented): Requested AEAD algorithm not found');
    assert.equal(found.features.esp6, false, 'nor between IPv6 addresses');
    assert.equal(found.reasons.esp6, 'ENOSYS (Function not implemented): Requested AEAD algorithm not found');
  });
});

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { Agent, familiesUnavailable, selectDataplane } from '../../src/agent/agent';
import { requireKernelFamilies } from '../../src/nodespec/kernel-families';
import type { AgentPorts } from '../../src/agent/control-plane-port';
import { FileSpecSource } from '../../src/agent/files/spec-source';
import { FileStatusSink } from '../../src/agent/files/status-sink';
import { ebpfDataplane } from '../../src/dataplane/ebpf/dataplane';
import { mainRoutes as readMainRoutes } from '../support/routes';
import { unchangedApply as unchanged } from '../support/node-apply';
import { InputError, StateError } from '../../src/errors';
import { ip } from '../../src/kernel/command';
import { createNetns, deleteNetns } from '../../src/kernel/netns';
import type { NodeDataplaneSpec } from '../../src/nodespec/spec';
import { type ProbeReport, featureNames } from '../../src/probe/features';
import { requireRoot, uniqueName } from '../support/kernel';
import {
  dualStackHubSpec,
  hubSpec,
  hubSpecDocument,
  ipv6Underlay,
  nodeSpec,
  nodeSpecDocument,
  peerB,
  peerC,
  specFileText,
  specWith,
} from '../support/node-specs';
import { formatIp } from '../../src/net/cidr';

const report = (missing: Partial<Record<string, string>> = {}): ProbeReport => ({
  features: Object.fromEntries(featureNames.map((f) => [f, !(f in missing)])) as ProbeReport['features'],
  reasons: missing,
});

// The status's appliedSpec for nodeSpec([peerB]): the first 16 hex digits of the sha256 of its canonical
// JSON (docs/lab.md), from `sha256sum` of that text; the lab compares it with the spec it wrote.
const specBDigest = 'e6b714edfe2924f1';

describe('agent: dataplane choice', () => {
  it('runs eBPF where the kernel can, whether asked for auto or ebpf', () => {
    assert.equal(selectDataplane('auto', report()), 'ebpf');
    assert.equal(selectDataplane('ebpf', report()), 'ebpf');
    assert.equal(selectDataplane('ebpf', report({ tcx: 'EINVAL' })), 'ebpf', 'clsact is enough');
  });

  it('says per IP family what the chosen dataplane lacks on this kernel, and a spec of such a family is refused by its PodCIDR', () => {
    assert.deepEqual(familiesUnavailable('ebpf', report()), {});
    const noIpv6Routes = report({ routes6: 'EAFNOSUPPORT', nftables6: 'no ip6 table' });
    assert.deepEqual(familiesUnavailable('ebpf', noIpv6Routes), { 6: 'routes6 (EAFNOSUPPORT)' });
    assert.deepEqual(familiesUnavailable('kernel', noIpv6Routes), { 6: 'routes6 (EAFNOSUPPORT), nftables6 (no ip6 table)' });
    const unavailable = familiesUnavailable('ebpf', noIpv6Routes);
    assert.doesNotThrow(() => requireKernelFamilies(hubSpec(), unavailable, 'the eBPF datapath'), 'IPv4 alone is carried');
    assert.throws(
      () => requireKernelFamilies(dualStackHubSpec(), unavailable, 'the eBPF datapath'),
      (err: unknown) =>
        err instanceof InputError &&
        err.field === 'spec.secondary.podCIDR' &&
        err.reason === 'this kernel lacks what the eBPF datapath needs to carry IPv6: routes6 (EAFNOSUPPORT)',
    );
    // IPv4 pods over an IPv6 underlay need IPv6 as much (issue 29).
    const overIpv6 = specWith(ipv6Underlay(hubSpecDocument()), () => {});
    assert.throws(
      () => requireKernelFamilies(overIpv6, unavailable, 'the eBPF datapath'),
      (err: unknown) =>
        err instanceof InputError &&
        err.field === 'spec.node.underlayAddress' &&
        err.value === formatIp(overIpv6.node.underlayAddress) &&
        err.reason === 'this kernel lacks what the eBPF datapath needs to tunnel over IPv6: routes6 (EAFNOSUPPORT)',
    );
  });

  it('refuses a forced ebpf on a kernel that lacks something, naming what and why', () => {
    assert.throws(
      () => selectDataplane('ebpf', report({ btf: 'no /sys/kernel/btf/vmlinux' })),
      (err: unknown) =>
        err instanceof InputError &&
        err.field === '--dataplane' &&
        err.value === 'ebpf' &&
        err.message.includes('btf (no /sys/kernel/btf/vmlinux)'),
    );
    assert.throws(() => selectDataplane('ebpf', report({ tcx: 'x', clsact: 'y' })), /clsact/);
  });

  it('runs the kernel fallback when asked or when eBPF cannot run, and refuses when neither can', () => {
    assert.equal(selectDataplane('kernel', report()), 'kernel');
    assert.equal(selectDataplane('auto', report({ lpmTrie: 'EINVAL' })), 'kernel');
    assert.throws(
      () => selectDataplane('kernel', report({ nftables: 'no nft' })),
      (err: unknown) =>
        err instanceof InputError && err.field === '--dataplane' && /kernel fallback needs: nftables \(no nft\)/.test(err.message),
    );
    assert.throws(
      () => selectDataplane('auto', report({ lpmTrie: 'EINVAL', vxlan: 'ENOTSUP' })),
      (err: unknown) => err instanceof StateError && /eBPF lacks lpmTrie.*fallback lacks vxlan/.test(err.message),
    );
  });

  it('says the process was refused, not that the kernel lacks it, when every reason is a refusal (a capability missing)', () => {
    const eperm = 'RTNETLINK answers: Operation not permitted';
    assert.throws(
      () =>
        selectDataplane(
          'kernel',
          report({ vxlan: eperm, nftables: 'netlink: Error: cache initialization failed: Operation not permitted' }),
        ),
      {
        message:
          '--dataplane: this process is not permitted what the kernel fallback needs (a capability missing? docs/helm.md, "The agent\'s privileges"): vxlan (RTNETLINK answers: Operation not permitted), nftables (netlink: Error: cache initialization failed: Operation not permitted) (got "kernel")',
      },
    );
    assert.throws(
      () =>
        selectDataplane(
          'ebpf',
          report({ bpf: 'map create failed: EPERM (Operation not permitted): strait_probe', btf: 'no /sys/kernel/btf/vmlinux' }),
        ),
      /^InputError: --dataplane: this kernel lacks what the eBPF dataplane needs: bpf \(map create/,
      'one reason is not a refusal',
    );
    assert.throws(
      () => selectDataplane('auto', report({ lpmTrie: 'map create failed: EPERM (Operation not permitted): strait_probe', vxlan: eperm })),
      (err: unknown) =>
        err instanceof StateError &&
        err.message ===
          `this process is not permitted what either dataplane needs (a capability missing? docs/helm.md, "The agent's privileges"): eBPF: lpmTrie (map create failed: EPERM (Operation not permitted): strait_probe); the kernel fallback: vxlan (${eperm})`,
    );
  });
});

describe('agent: reconcile (routes in a real namespace, datapath faked)', function () {
  requireRoot(this);
  let ns: string;
  let dir: string;
  let lines: Record<string, unknown>[];
  let applied: NodeDataplaneSpec[];
  let failWith: string | undefined;
  let agent: Agent;
  let specPath: string;
  let statusPath: string;

  const log = () =>
    pino(
      { level: 'debug' },
      new Writable({
        write(chunk, _enc, done) {
          lines.push(JSON.parse(String(chunk)));
          done();
        },
      }),
    );
  const writeSpec = (text: string) => {
    writeFileSync(join(dir, '.spec.tmp'), text);
    renameSync(join(dir, '.spec.tmp'), specPath);
  };
  const heartbeat = () => JSON.parse(readFileSync(statusPath, 'utf8'));
  /** The heartbeat without its time and conditions (those are checked by `conditions`). */
  const beatFields = () => ({ ...heartbeat(), time: 0, conditions: 0 });
  /** Each condition as "type status reason". */
  const conditions = () =>
    (heartbeat().conditions as { type: string; status: string; reason: string }[]).map((c) => `${c.type} ${c.status} ${c.reason}`);
  const ports = (): AgentPorts => ({ source: new FileSpecSource(specPath, log()), sink: new FileStatusSink(statusPath) });
  const messages = () => lines.map((l) => l.msg);

  beforeEach(() => {
    ns = uniqueName('strait-test-agent');
    createNetns(ns);
    ip(['link', 'add', 'strait0', 'type', 'veth', 'peer', 'name', 'other0'], ns);
    ip(['link', 'set', 'strait0', 'up'], ns);
    dir = mkdtempSync(join(tmpdir(), 'strait-agent-'));
    lines = [];
    applied = [];
    failWith = undefined;
    specPath = join(dir, 'n1.json');
    statusPath = join(dir, 'status', 'n1.json');
    const datapath = {
      apply: (spec: NodeDataplaneSpec) => {
        if (failWith) throw new Error(failWith);
        applied.push(spec);
        return unchanged;
      },
      close: () => {},
    };
    agent = new Agent(ports(), ebpfDataplane(datapath, ns), log());
  });
  afterEach(() => {
    deleteNetns(ns);
    rmSync(dir, { recursive: true, force: true });
  });

  it('waits for a spec while ready, applies it with its routes, and keeps the last good spec when the file goes bad', () => {
    agent.tick();
    assert.equal(applied.length, 0);
    assert.deepEqual(beatFields(), { ready: true, time: 0, conditions: 0, dataplane: 'ebpf', specGeneration: 0 });
    assert.deepEqual(conditions(), ['Applied False NoSpec', 'Ready True DatapathReady']);
    const readySince = heartbeat().conditions[1].lastTransitionTime;

    writeSpec(specFileText(nodeSpecDocument([peerB])));
    agent.tick();
    assert.deepEqual(applied.at(-1), nodeSpec([peerB]));
    assert.deepEqual(
      readMainRoutes(ns)
        .map((r) => r.dst)
        .sort(),
      ['10.1.0.0/16', '10.60.0.0/24'],
    );
    assert.deepEqual(beatFields(), { ready: true, time: 0, conditions: 0, dataplane: 'ebpf', specGeneration: 1, appliedSpec: specBDigest });
    assert.deepEqual(conditions(), ['Applied True SpecApplied', 'Ready True DatapathReady']);
    assert.equal(heartbeat().conditions[1].lastTransitionTime, readySince, 'Ready did not change: its transition time stays');

    // Half-written, then invalid: neither is applied; the last good spec is re-applied every tick; one error line each.
    writeSpec(specFileText(nodeSpecDocument([peerB, peerC])).slice(0, 120));
    agent.tick();
    agent.tick();
    writeSpec(specFileText({ ...nodeSpecDocument([peerB, peerC]), podCIDR: '10.0.0.0/33' }));
    agent.tick();
    assert.equal(applied.length, 4);
    assert.ok(applied.every((s) => s.peers.length === 1));
    const rejected = lines.filter((l) => l.msg === 'spec rejected');
    assert.equal(rejected.length, 2);
    assert.equal(rejected[1]!.field, 'spec.podCIDR');
    assert.equal(rejected[1]!.value, '10.0.0.0/33');
    assert.equal(heartbeat().specGeneration, 1);
    assert.equal(heartbeat().ready, true);
    assert.match(heartbeat().error ?? '', /^spec rejected: spec\.podCIDR/, 'the heartbeat says the newest spec is not in force');
    assert.equal(heartbeat().appliedSpec, specBDigest, 'and names the one that is');
    assert.deepEqual(conditions(), ['Applied False SpecRejected', 'Ready True DatapathReady']);
    assert.equal(
      heartbeat().conditions[0].message,
      'spec rejected: spec.podCIDR: prefix length must be 1 to 32 for IPv4 (got "10.0.0.0/33"); spec e6b714edfe2924f1 stays applied',
    );

    // An encrypted peering is the kernel fallback's: the eBPF dataplane refuses it, naming the field.
    writeSpec(specFileText(nodeSpecDocument([{ ...peerB, transport: 'ipsec' }])));
    agent.tick();
    assert.equal(lines.at(-1)!.field, 'spec.peers[0].transport');
    assert.match(String(lines.at(-1)!.error), /--dataplane kernel/);
    assert.ok(applied.every((s) => s.peers.every((p) => p.transport === 'vxlan')));

    // An IPv6 public address on an IPv4 underlay: no tunnel joins two families, refused before anything is applied.
    const doc = nodeSpecDocument([peerB]);
    writeSpec(specFileText({ ...doc, node: { ...doc.node, publicAddress: '2001:db8::1' } }));
    agent.tick();
    assert.equal(lines.at(-1)!.field, 'spec.node.publicAddress');
    assert.match(
      String(lines.at(-1)!.error),
      /is IPv6, not the family of spec\.node\.underlayAddress .* \(IPv4\): a tunnel's two ends are of one family/,
    );
    assert.ok(applied.every((s) => s.node.publicAddress === undefined));

    writeSpec(specFileText(nodeSpecDocument([peerB, peerC])));
    agent.tick();
    assert.equal(applied.at(-1)!.peers.length, 2);
    assert.deepEqual(
      readMainRoutes(ns)
        .map((r) => r.dst)
        .sort(),
      ['10.1.0.0/16', '10.2.0.0/20', '10.60.0.0/24', '10.70.0.0/26'],
    );
    assert.equal(heartbeat().specGeneration, 2);
    assert.equal(heartbeat().error, undefined);
    assert.deepEqual(messages().filter((m) => m === 'spec applied').length, 2);
  });

  it('is not ready while applying fails, logs each distinct error once, and says when it recovered', () => {
    writeSpec(specFileText(nodeSpecDocument()));
    failWith = 'bpf_map_update_elem: ENOMEM';
    agent.tick();
    agent.tick();
    assert.equal(heartbeat().ready, false);
    assert.equal(heartbeat().specGeneration, 0);
    assert.equal(heartbeat().error, failWith);
    assert.deepEqual(conditions(), ['Applied False ApplyFailed', 'Ready False ApplyFailed']);
    assert.equal(heartbeat().conditions[1].message, failWith);
    assert.equal(messages().filter((m) => m === 'applying the spec failed').length, 1);
    failWith = undefined;
    agent.tick();
    assert.equal(heartbeat().ready, true);
    assert.equal(heartbeat().error, undefined);
    assert.equal(heartbeat().specGeneration, 1);
    assert.ok(messages().includes('reconcile recovered'));
    agent.beat(false);
    assert.equal(heartbeat().ready, false);
  });

  it('refuses a spec written for another node when --node is given', () => {
    agent = new Agent(
      { ...ports(), nodeName: 'n2' },
      ebpfDataplane({ apply: (s: NodeDataplaneSpec) => (applied.push(s), unchanged), close: () => {} }, ns),
      log(),
    );
    writeSpec(specFileText(nodeSpecDocument()));
    agent.tick();
    assert.equal(applied.length, 0);
    assert.equal(lines.at(-1)!.field, 'spec.node.name');
    assert.equal(heartbeat().specGeneration, 0);
  });

  it('hands back the memory that parsing or a full read grew, at the first tick that did neither, once', () => {
    let released = 0;
    let clock = 0;
    const dataplane = ebpfDataplane(
      { apply: (s: NodeDataplaneSpec) => (applied.push(s), unchanged), close: () => {} },
      ns,
      undefined,
      undefined,
      60_000,
      () => clock,
    );
    agent = new Agent(ports(), dataplane, log(), undefined, () => released++);
    agent.tick();
    assert.equal(released, 0, 'no spec: nothing parsed');
    writeSpec(specFileText(nodeSpecDocument([peerB])));
    agent.tick();
    writeSpec(specFileText(nodeSpecDocument([peerB, peerC])));
    agent.tick();
    assert.equal(released, 0, 'not while the specs change');
    agent.tick();
    assert.equal(released, 1, 'the first tick that finds no newer spec');
    agent.tick();
    agent.tick();
    assert.equal(released, 1, 'not again while nothing changes');
    clock += 60_000;
    agent.tick();
    assert.equal(released, 1, 'not at the tick of a resync (the node read in full)');
    agent.tick();
    assert.equal(released, 2, 'but at the next');
    writeSpec(specFileText(nodeSpecDocument([peerB])).slice(0, 120));
    agent.tick();
    agent.tick();
    assert.equal(released, 3, 'a document that was parsed and rejected grew the heap too');
  });
});

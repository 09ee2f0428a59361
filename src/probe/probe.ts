/**
 * Finds what this kernel supports by trying each feature, never by reading version numbers. Anything
 * that creates links runs in a throw-away network namespace, so the host is never touched.
 */
import { BpfMap, BpfProgram, MapFlags, MapType, ProgType, attachClsact, detachClsact, ifIndex, ipv4, lpmKey, u32 } from '../bpf';
import { BPF_LINK_TYPE_TCX } from '../bpf/tc';
import { native } from '../bpf/native';
import { CommandError, ip, nft } from '../kernel/command';
import { netnsPath, withThrowawayNetns } from '../kernel/netns';
import { type Feature, type ProbeReport, featureNames } from './features';

/** `r0 = 0; exit`: the smallest valid TC program (TC_ACT_OK). */
const returnZero = Buffer.from('b700000000000000' + '9500000000000000', 'hex');

/** The kernel's own words: a failed command's stderr rather than the whole command line. */
function reason(err: unknown): string {
  if (err instanceof CommandError && err.stderr.trim() !== '') return err.stderr.trim().replace(/^Error:\s*/, '').replace(/\.$/, '');
  return err instanceof Error ? err.message : String(err);
}

type Check = () => void | Promise<void>;

async function tryFeature(report: ProbeReport, feature: Feature, check: Check): Promise<void> {
  try {
    await check();
    report.features[feature] = true;
  } catch (err) {
    report.features[feature] = false;
    report.reasons[feature] = reason(err);
  }
}

function withProgram<T>(use: (prog: BpfProgram) => T): T {
  const prog = BpfProgram.fromInstructions(ProgType.SchedCls, returnZero);
  try {
    return use(prog);
  } finally {
    prog.close();
  }
}

function withMap(spec: Parameters<typeof BpfMap.create>[0], use: (map: BpfMap<unknown, unknown>) => void = () => {}): void {
  const map = BpfMap.create(spec) as BpfMap<unknown, unknown>;
  try {
    use(map);
  } finally {
    map.close();
  }
}

async function probeBpf(report: ProbeReport): Promise<void> {
  await tryFeature(report, 'bpf', () => withMap({ type: MapType.Array, name: 'strait_probe', key: u32, value: u32, maxEntries: 1 }));
  await tryFeature(report, 'btf', () => void native().probeKernelBtf());
  await tryFeature(report, 'lpmTrie', () =>
    withMap({ type: MapType.LpmTrie, name: 'strait_probe', key: lpmKey(ipv4), value: u32, maxEntries: 1, flags: MapFlags.NoPrealloc }));
  await tryFeature(report, 'testRun', () =>
    withProgram((prog) => {
      const r = prog.testRun(Buffer.alloc(64));
      if (r.retval !== 0) throw new Error(`test run returned ${r.retval}, expected 0`);
    }));
}

async function probeInNetns(report: ProbeReport, ns: string): Promise<void> {
  ip(['link', 'set', 'lo', 'up'], ns);
  const target = { ifindex: ifIndex('lo', netnsPath(ns)), netns: netnsPath(ns) };
  await tryFeature(report, 'clsact', () =>
    withProgram((prog) => {
      attachClsact({ ...target, direction: 'ingress' }, prog, { priority: 1, handle: 1 });
      if (!detachClsact({ ...target, direction: 'ingress' }, { priority: 1, handle: 1 })) throw new Error('attached filter not found');
    }));
  await tryFeature(report, 'tcx', () =>
    withProgram((prog) => {
      // Unpinned: the link goes away with its fd.
      const fd = native().tcxAttach({ ...target, direction: 'ingress' }, prog.fd);
      try {
        const link = native().linkInfo(fd);
        if (link.type !== BPF_LINK_TYPE_TCX) throw new Error(`link type ${link.type}, expected tcx (${BPF_LINK_TYPE_TCX})`);
      } finally {
        native().closeFd(fd);
      }
    }));
  await tryFeature(report, 'vxlan', () => void ip(['link', 'add', 'probe-vx', 'type', 'vxlan', 'id', '42', 'dstport', '4789', 'local', '127.0.0.1', 'nolearning'], ns));
  await tryFeature(report, 'vxlanCollectMd', () => void ip(['link', 'add', 'probe-vxmd', 'type', 'vxlan', 'dstport', '4790', 'external'], ns));
  await tryFeature(report, 'policyRouting', () => {
    ip(['route', 'add', 'blackhole', '10.255.0.0/24', 'table', '18952'], ns);
    ip(['rule', 'add', 'pref', '100', 'to', '10.255.0.0/24', 'lookup', '18952'], ns);
  });
  await tryFeature(report, 'nftables', () =>
    void nft('table inet strait_probe {\n map m { type ipv4_addr : ipv4_addr; elements = { 10.0.0.1 : 10.1.0.1 } }\n}\n', ns));
  await tryFeature(report, 'xfrm', () =>
    void ip(['xfrm', 'policy', 'add', 'src', '10.1.0.0/16', 'dst', '10.2.0.0/16', 'dir', 'out', 'tmpl', 'src', '192.0.2.1', 'dst', '192.0.2.2', 'proto', 'esp', 'reqid', '1', 'mode', 'tunnel'], ns));
  await tryFeature(report, 'esp', () =>
    void ip(['xfrm', 'state', 'add', 'src', '192.0.2.1', 'dst', '192.0.2.2', 'proto', 'esp', 'spi', '0x100', 'reqid', '1', 'mode', 'tunnel', 'aead', 'rfc4106(gcm(aes))', `0x${'11'.repeat(20)}`, '128'], ns));
  await tryFeature(report, 'xfrmInterface', () => void ip(['link', 'add', 'probe-xfrm', 'type', 'xfrm', 'if_id', '1'], ns));
}

export async function probeKernel(): Promise<ProbeReport> {
  const report: ProbeReport = { features: Object.fromEntries(featureNames.map((f) => [f, false])) as ProbeReport['features'], reasons: {} };
  await probeBpf(report);
  try {
    await withThrowawayNetns('strait-probe', (ns) => probeInNetns(report, ns));
  } catch (err) {
    // No namespace (not root, no iproute2): every feature tried in one is missing for the same reason.
    for (const f of ['clsact', 'tcx', 'vxlan', 'vxlanCollectMd', 'policyRouting', 'nftables', 'xfrm', 'esp', 'xfrmInterface'] as const) {
      report.reasons[f] ??= `cannot create a throw-away network namespace: ${reason(err)}`;
    }
  }
  return report;
}

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AgentEnvironment, type AgentFlags, parseAgentFlags } from '../../src/cli/agent-command';
import { InputError } from '../../src/errors';

const flags = (over: Partial<AgentFlags> = {}): AgentFlags => ({
  spec: '/run/strait/lab/a/nodes/n1.json',
  pinRoot: '/sys/fs/bpf/strait/n1',
  podInterfaces: '^p-',
  dataplane: 'auto',
  attach: 'auto',
  interval: '1',
  resyncInterval: '60',
  probeInterval: '0.05',
  probeMultiplier: '3',
  ...over,
});
/** --kubernetes, without the file mode's --spec. */
const kubernetes = (over: Partial<AgentFlags> = {}): Partial<AgentFlags> => ({ spec: undefined, kubernetes: true, ...over });

function rejects(over: Partial<AgentFlags>, flag: string, value: unknown, env: AgentEnvironment = {}, reason?: RegExp): void {
  assert.throws(
    () => parseAgentFlags(flags(over), env),
    (err: unknown) => {
      assert.ok(err instanceof InputError, String(err));
      assert.deepEqual({ field: err.field, value: err.value }, { field: flag, value });
      if (reason) assert.match(err.reason, reason);
      return true;
    },
  );
}

describe('strait agent flags', () => {
  it('takes the defaults of docs/lab.md', () => {
    assert.deepEqual(parseAgentFlags(flags(), {}), {
      cleanup: false,
      controlPlane: { kind: 'files', specPath: '/run/strait/lab/a/nodes/n1.json' },
      pinRoot: '/sys/fs/bpf/strait/n1',
      podInterfaces: /^p-/,
      dataplane: 'auto',
      attachMode: 'auto',
      intervalMs: 1000,
      resyncMs: 60_000,
      liveness: { intervalMs: 50, multiplier: 3 },
      probeCache: '/run/strait/probe-cache.json',
      metrics: { address: '127.0.0.1', port: 9972, addressFrom: 'default' },
    });
    const all = parseAgentFlags(
      flags({ status: '/s.json', node: 'n1', interval: '0.2', dataplane: 'ebpf', attach: 'clsact', podInterfaces: '^(p|veth)-' }),
      {},
    );
    assert.equal(all.intervalMs, 200);
    assert.equal(parseAgentFlags(flags({ resyncInterval: '5' }), {}).resyncMs, 5_000);
    assert.equal(parseAgentFlags(flags({ probeInterval: '0' }), {}).liveness, undefined, 'probes off');
    assert.deepEqual(parseAgentFlags(flags({ probeInterval: '0.1', probeMultiplier: '5' }), {}).liveness, {
      intervalMs: 100,
      multiplier: 5,
    });
    assert.deepEqual(all.controlPlane, {
      kind: 'files',
      specPath: '/run/strait/lab/a/nodes/n1.json',
      statusPath: '/s.json',
      nodeName: 'n1',
    });
    assert.equal(all.attachMode, 'clsact');
    assert.ok(all.podInterfaces.test('veth-1') && !all.podInterfaces.test('eth0'));
  });

  it('keeps the probe report in --probe-cache (absolute), or nowhere with none', () => {
    assert.equal(parseAgentFlags(flags({ probeCache: '/var/run/probe.json' }), {}).probeCache, '/var/run/probe.json');
    assert.equal('probeCache' in parseAgentFlags(flags({ probeCache: 'none' }), {}), false);
    rejects({ probeCache: 'probe.json' }, '--probe-cache', 'probe.json');
  });

  it('needs --spec except for --cleanup', () => {
    rejects({ spec: undefined }, '--spec', undefined);
    assert.equal(parseAgentFlags(flags({ spec: undefined, cleanup: true }), {}).cleanup, true);
    assert.deepEqual(
      parseAgentFlags(flags({ spec: undefined, config: '/etc/strait/n1.json' }), {}).controlPlane,
      { kind: 'files', specPath: '/etc/strait/n1.json' },
      '--config is the same file',
    );
    rejects({ config: '/etc/strait/n1.json' }, '--config', '/etc/strait/n1.json');
  });

  it('refuses every bad flag, naming it and its value', () => {
    rejects({ podInterfaces: '^p-(' }, '--pod-interfaces', '^p-(');
    rejects({ interval: '0' }, '--interval', '0');
    rejects({ interval: '-1' }, '--interval', '-1');
    rejects({ interval: '1s' }, '--interval', '1s');
    rejects({ interval: '' }, '--interval', '');
    rejects({ resyncInterval: '0' }, '--resync-interval', '0');
    rejects({ probeInterval: '-1' }, '--probe-interval', '-1');
    rejects({ probeMultiplier: '0' }, '--probe-multiplier', '0');
    rejects({ probeMultiplier: '2.5' }, '--probe-multiplier', '2.5');
    rejects({ dataplane: 'xdp' }, '--dataplane', 'xdp');
    rejects({ attach: 'xdp' }, '--attach', 'xdp');
    rejects({ pinRoot: 'pins/n1' }, '--pin-root', 'pins/n1');
    rejects({ netns: 'strait-no-such-namespace' }, '--netns', 'strait-no-such-namespace');
    rejects({ netns: '../etc' }, '--netns', '../etc');
    rejects({ node: '' }, '--node', '');
  });

  describe('--kubernetes', () => {
    let dir: string;
    let kubeconfig: string;
    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'strait-flags-'));
      kubeconfig = join(dir, 'kubeconfig');
      writeFileSync(kubeconfig, 'apiVersion: v1\nkind: Config\n');
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('takes the node from --node, else NODE_NAME; the namespace from --namespace, else POD_NAMESPACE, else strait-system; a status refresh every 300 s', () => {
      assert.deepEqual(parseAgentFlags(flags(kubernetes({ node: 'n1' })), {}).controlPlane, {
        kind: 'kubernetes',
        nodeName: 'n1',
        namespace: 'strait-system',
        statusRefreshMs: 300_000,
      });
      assert.deepEqual(parseAgentFlags(flags(kubernetes()), { NODE_NAME: 'worker-2.example', POD_NAMESPACE: 'kube-strait' }).controlPlane, {
        kind: 'kubernetes',
        nodeName: 'worker-2.example',
        namespace: 'kube-strait',
        statusRefreshMs: 300_000,
      });
      const all = parseAgentFlags(flags(kubernetes({ node: 'n1', namespace: 'lab', kubeconfig, statusRefresh: '5', interval: '2' })), {
        NODE_NAME: 'n9',
        POD_NAMESPACE: 'other',
        KUBECONFIG: '/nowhere',
      });
      assert.deepEqual(
        all.controlPlane,
        { kind: 'kubernetes', nodeName: 'n1', namespace: 'lab', kubeconfig, statusRefreshMs: 5_000 },
        'flags win over the environment',
      );
      assert.equal(all.intervalMs, 2_000);
    });

    it("takes the kubeconfig from --kubeconfig, else KUBECONFIG, else none (the Pod's service account)", () => {
      const controlPlane = (over: Partial<AgentFlags>, env: AgentEnvironment) =>
        parseAgentFlags(flags(kubernetes({ node: 'n1', ...over })), env).controlPlane as { kubeconfig?: string };
      assert.equal(controlPlane({ kubeconfig }, {}).kubeconfig, kubeconfig);
      assert.equal(controlPlane({}, { KUBECONFIG: kubeconfig }).kubeconfig, kubeconfig);
      assert.equal(controlPlane({}, {}).kubeconfig, undefined);
      assert.equal(controlPlane({}, { KUBECONFIG: '' }).kubeconfig, undefined, 'an empty KUBECONFIG is none');
    });

    it("refuses the file mode's flags, naming them", () => {
      const fileMode = /is the file mode; --kubernetes reads the NodeDataplane from the API server/;
      rejects(kubernetes({ node: 'n1', spec: '/n1.json' }), '--spec', '/n1.json', {}, fileMode);
      rejects(kubernetes({ node: 'n1', config: '/n1.json' }), '--config', '/n1.json', {}, fileMode);
      rejects(kubernetes({ node: 'n1', status: '/s.json' }), '--status', '/s.json', {}, fileMode);
    });

    it('refuses its own flags without --kubernetes', () => {
      rejects({ kubeconfig }, '--kubeconfig', kubeconfig, {}, /only with --kubernetes/);
      rejects({ namespace: 'lab' }, '--namespace', 'lab');
      rejects({ statusRefresh: '30' }, '--status-refresh', '30');
      rejects({ poolIpamSocket: '/run/strait/ipam.sock' }, '--pool-ipam-socket', '/run/strait/ipam.sock', {}, /^only with --kubernetes$/);
      rejects({ poolIpamGcInterval: '60' }, '--pool-ipam-gc-interval', '60', {}, /^only with --kubernetes$/);
      rejects({ poolIpamPluginDir: '/host/cni-bin' }, '--pool-ipam-plugin-dir', '/host/cni-bin', {}, /^only with --kubernetes$/);
      rejects({ daemonset: 'strait-agent' }, '--daemonset', 'strait-agent', {}, /^only with --kubernetes$/);
    });

    it('watches the DaemonSet --daemonset names (a DNS-1123 subdomain), none unless given', () => {
      const daemonSet = (over: Partial<AgentFlags>) =>
        (parseAgentFlags(flags(kubernetes({ node: 'n1', ...over })), {}).controlPlane as { daemonSet?: string }).daemonSet;
      assert.equal(daemonSet({}), undefined);
      assert.equal(daemonSet({ daemonset: 'strait-agent' }), 'strait-agent');
      for (const bad of ['', 'Strait_Agent', 'a,metadata.name=b', 'x'.repeat(254)])
        rejects(kubernetes({ node: 'n1', daemonset: bad }), '--daemonset', bad, {}, /DNS-1123 subdomain|expected a string/);
    });

    it('serves the pool IPAM only with --pool-ipam-socket, an absolute path, scanning for garbage every 600 s unless --pool-ipam-gc-interval says', () => {
      const poolIpam = (over: Partial<AgentFlags>) =>
        (parseAgentFlags(flags(kubernetes({ node: 'n1', ...over })), {}).controlPlane as { poolIpam?: unknown }).poolIpam;
      assert.equal(poolIpam({}), undefined);
      assert.deepEqual(poolIpam({ poolIpamSocket: '/run/strait/ipam.sock' }), { socket: '/run/strait/ipam.sock', gcIntervalMs: 600_000 });
      assert.deepEqual(poolIpam({ poolIpamSocket: '/var/run/x.sock', poolIpamGcInterval: '2.5' }), {
        socket: '/var/run/x.sock',
        gcIntervalMs: 2_500,
      });
      rejects(
        kubernetes({ node: 'n1', poolIpamSocket: 'ipam.sock' }),
        '--pool-ipam-socket',
        'ipam.sock',
        {},
        /must be an absolute path .* like \/run\/strait\/ipam\.sock/,
      );
      rejects(kubernetes({ node: 'n1', poolIpamSocket: '' }), '--pool-ipam-socket', '');
      rejects(kubernetes({ node: 'n1', poolIpamSocket: '/run/strait/ipam.sock', poolIpamGcInterval: '0' }), '--pool-ipam-gc-interval', '0');
      rejects(kubernetes({ node: 'n1', poolIpamGcInterval: '60' }), '--pool-ipam-gc-interval', '60', {}, /^only with --pool-ipam-socket$/);
    });

    it('takes strait-ipam off the node on uninstall only with --daemonset, given both its directories, absolute', () => {
      const plugin = (over: Partial<AgentFlags>) => parseAgentFlags(flags(kubernetes({ node: 'n1', ...over })), {}).poolIpamPlugin;
      const both = { poolIpamPluginDir: '/host/cni-bin', poolIpamRuntimeDir: '/var/lib/strait/strait-ipam' };
      assert.equal(plugin({ daemonset: 'strait-agent' }), undefined);
      assert.deepEqual(plugin({ daemonset: 'strait-agent', ...both }), {
        cniBinDir: '/host/cni-bin',
        runtimeDir: '/var/lib/strait/strait-ipam',
      });
      rejects(kubernetes({ node: 'n1', ...both }), '--pool-ipam-plugin-dir', '/host/cni-bin', {}, /^only with --daemonset/);
      rejects(
        kubernetes({ node: 'n1', daemonset: 'a', poolIpamPluginDir: '/host/cni-bin' }),
        '--pool-ipam-runtime-dir',
        undefined,
        {},
        /^required with --pool-ipam-plugin-dir$/,
      );
      rejects(
        kubernetes({ node: 'n1', daemonset: 'a', poolIpamRuntimeDir: '/r' }),
        '--pool-ipam-plugin-dir',
        undefined,
        {},
        /^required with --pool-ipam-runtime-dir$/,
      );
      rejects(
        kubernetes({ node: 'n1', daemonset: 'a', ...both, poolIpamRuntimeDir: 'r' }),
        '--pool-ipam-runtime-dir',
        'r',
        {},
        /^must be an absolute path$/,
      );
    });

    it('refuses a missing or bad node name, namespace, kubeconfig or period, naming the flag or variable', () => {
      rejects(kubernetes(), '--node', undefined, {}, /give --node or set NODE_NAME/);
      rejects(kubernetes(), '--node', '', { NODE_NAME: '' });
      rejects(kubernetes({ node: 'n1,metadata.name=n2' }), '--node', 'n1,metadata.name=n2');
      rejects(kubernetes(), 'NODE_NAME', 'Node_1', { NODE_NAME: 'Node_1' });
      rejects(kubernetes({ node: 'n1', namespace: 'Strait' }), '--namespace', 'Strait');
      rejects(kubernetes({ node: 'n1' }), 'POD_NAMESPACE', 'a.b', { POD_NAMESPACE: 'a.b' });
      rejects(kubernetes({ node: 'n1', kubeconfig: join(dir, 'none') }), '--kubeconfig', join(dir, 'none'), {}, /no such file/);
      rejects(kubernetes({ node: 'n1', kubeconfig: dir }), '--kubeconfig', dir);
      rejects(kubernetes({ node: 'n1' }), 'KUBECONFIG', join(dir, 'none'), { KUBECONFIG: join(dir, 'none') });
      rejects(kubernetes({ node: 'n1', statusRefresh: '0' }), '--status-refresh', '0');
      rejects(kubernetes({ node: 'n1', statusRefresh: '30s' }), '--status-refresh', '30s');
    });
  });
});

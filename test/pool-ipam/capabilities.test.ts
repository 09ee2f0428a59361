/**
 * The pool IPAM service with exactly the capabilities the Helm chart gives the agent's container when
 * poolIpam.enabled (read from `helm template`), started as a container runtime starts that container
 * (test/support/container.ts; the host's network namespace, as hostNetwork): its conflict probe, sent from
 * inside the pod's namespace, works through the real macvlan plugin; without SYS_ADMIN it cannot enter
 * that namespace and without NET_RAW it cannot open the probe's packet socket, and ADD says so.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { renderChart } from '../support/chart';
import { hostNetworkContainerCommand, requireContainerTools } from '../support/container';
import { requireRoot, uniqueName } from '../support/kernel';
import { waitFor } from '../support/wait';
import { type PoolIpamFixture, poolIpamFixture } from './fixture';

const cliPath = join(__dirname, '../../src/cli/main.js');

describe('the pool IPAM service with the capabilities the Helm chart gives the agent (real process, real macvlan)', function () {
  requireRoot(this);
  this.timeout(90_000);
  const chartCapabilities = renderChart(['--set', 'poolIpam.enabled=true']).find((o) => o.kind === 'DaemonSet')!.spec.template.spec
    .containers[0].securityContext.capabilities.add as string[];
  let f: PoolIpamFixture | undefined;
  let service: ChildProcess | undefined;
  let log = '';

  before(function () {
    requireContainerTools(this);
  });
  beforeEach(async () => {
    f = await poolIpamFixture({ inProcess: false });
  });
  afterEach(async () => {
    if (service && service.exitCode === null && service.signalCode === null) {
      const exited = new Promise((resolve) => service!.once('exit', resolve));
      service.kill('SIGTERM');
      await exited;
    }
    service = undefined;
    await f?.close();
  });

  /** `strait pool-ipam serve` as the agent's container would run it, with `capabilities`; resolves once STATUS says ready. */
  const serve = async (capabilities: string[]) => {
    const fx = f!;
    log = '';
    const argv = [
      process.execPath,
      cliPath,
      'pool-ipam',
      'serve',
      '--kubeconfig',
      fx.api.kubeconfigPath,
      '--node',
      'node-a',
      '--socket',
      fx.socket,
      '--gc-interval',
      '3600',
    ];
    const [command, ...args] = hostNetworkContainerCommand(capabilities, argv);
    service = spawn(command!, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    service.stderr!.on('data', (chunk) => {
      log += String(chunk);
    });
    await waitFor(
      'the service ready',
      async () => (await fx.node.runIpam('STATUS', { ...fx.config('macvlan'), cniVersion: '1.1.0' })).code === 0,
      20_000,
      () => log,
    );
  };
  /** ADD of a new pod with conflict detection on (no gateway to probe). */
  const add = async () => {
    const fx = f!;
    const pod = await fx.pod(uniqueName('web'));
    return fx.node.run(
      'ADD',
      fx.config('macvlan', { default_ipv4_ippool: ['pool-probe'], detect_ip_conflict: true, detect_gateway: false }),
      pod,
    );
  };

  it("probes from inside the pod's namespace with the chart's list: NET_ADMIN, BPF, PERFMON, SYS_ADMIN, NET_RAW", async () => {
    assert.deepEqual(chartCapabilities, ['NET_ADMIN', 'BPF', 'PERFMON', 'SYS_ADMIN', 'NET_RAW']);
    await f!.pool('pool-probe', { subnet: '10.6.9.0/24', ips: ['10.6.9.10'] });
    await serve(chartCapabilities);
    const out = await add();
    assert.equal(out.code, 0, out.stdout + out.stderr + log);
    assert.equal(out.json!.ips[0].address, '10.6.9.10/24');
  });

  // Code 5, not 4: the node's service lacks a capability; CNI_NETNS and CNI_IFNAME are fine.
  for (const [missing, error] of [
    [
      'SYS_ADMIN',
      /^cannot probe 10\.6\.9\.10 from eth0 in \/run\/netns\/sipam-\S+: enter network namespace failed: EPERM \(Operation not permitted\): \/run\/netns\/sipam-/,
    ],
    [
      'NET_RAW',
      /^cannot probe 10\.6\.9\.10 from eth0 in \/run\/netns\/sipam-\S+: open packet socket failed: EPERM \(Operation not permitted\): eth0 in \/run\/netns\/sipam-/,
    ],
  ] as const) {
    it(`cannot probe without ${missing}, and ADD fails saying why`, async () => {
      await f!.pool('pool-probe', { subnet: '10.6.9.0/24', ips: ['10.6.9.10'] });
      await serve(chartCapabilities.filter((c) => c !== missing));
      const out = await add();
      assert.notEqual(out.code, 0, out.stdout);
      assert.equal(out.json?.code, 5, out.stdout);
      assert.match(String(out.json?.msg), error, out.stdout + log);
    });
  }
});

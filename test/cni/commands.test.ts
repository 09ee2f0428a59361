import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger } from '../../src/log';
import { IpamError } from '../../src/pool-ipam/ipam-error';
import { type IpamServer, serveIpam } from '../../src/pool-ipam/ipam-server';
import { cniError, runStraitIpam } from './plugin-process';
import { RecordingHandler } from './recording-handler';
import { socketDir, staleSocket } from './socket-files';

const log = createLogger('test', 'silent');
const podArgs =
  'IgnoreUnknown=1;K8S_POD_NAMESPACE=web;K8S_POD_NAME=web-0;K8S_POD_INFRA_CONTAINER_ID=c1;K8S_POD_UID=5f0c2a3e-7d1b-4c1e-9a55-0d6f3b1e2c4a';
const add = {
  CNI_COMMAND: 'ADD',
  CNI_CONTAINERID: 'c1',
  CNI_NETNS: '/var/run/netns/cni-1',
  CNI_IFNAME: 'net1',
  CNI_ARGS: podArgs,
  CNI_PATH: '/opt/cni/bin',
};

describe('strait-ipam commands through the pool IPAM service', () => {
  let dir: { dir: string; cleanup: () => void };
  let socket: string;
  let handler: RecordingHandler;
  let server: IpamServer;
  /** What macvlan hands its IPAM plugin: its whole configuration, with the keys the runtime adds. */
  let network: (cniVersion: string, ipam?: Record<string, unknown>, more?: Record<string, unknown>) => object;

  beforeEach(async () => {
    dir = socketDir();
    socket = join(dir.dir, 'run', 'ipam.sock');
    handler = new RecordingHandler();
    server = await serveIpam({ socket, handler, log });
    network = (cniVersion, ipam = {}, more = {}) => ({
      cniVersion,
      name: 'underlay',
      type: 'macvlan',
      master: 'eth0',
      mode: 'bridge',
      runtimeConfig: { mac: '02:00:00:00:00:01' },
      args: { cni: { ips: ['10.6.0.9'] } },
      'cni.dev/attachment': 'x',
      ipam: { type: 'strait-ipam', socket, ...ipam },
      ...more,
    });
  });
  afterEach(async () => {
    await server.close();
    dir.cleanup();
  });

  describe('ADD', () => {
    beforeEach(() => {
      handler.addResponse = {
        ips: [
          { address: '10.6.0.2/24', gateway: '10.6.0.1', pool: 'v4-a', vlan: 100 },
          { address: 'fd00:6::2/64', pool: 'v6-a' },
        ],
        routes: [{ dst: '0.0.0.0/0', gw: '10.6.0.1' }, { dst: '192.0.2.0/24' }],
      };
    });

    /** The IPAM result of the service's answer above: no pool or vlan, no interface index. */
    const result = (cniVersion: string) => ({
      cniVersion,
      ips: [{ address: '10.6.0.2/24', gateway: '10.6.0.1' }, { address: 'fd00:6::2/64' }],
      routes: [{ dst: '0.0.0.0/0', gw: '10.6.0.1' }, { dst: '192.0.2.0/24' }],
      dns: {},
    });

    it('forwards the attachment, the pod and the ipam options, and prints a 1.1.0 IPAM result', async () => {
      const config = network('1.1.0', { default_ipv4_ippool: ['v4-a', 'v4-b'], default_ipv6_ippool: ['v6-a'], detect_ip_conflict: false });
      const run = await runStraitIpam(add, config);
      assert.deepEqual(
        { status: run.status, result: JSON.parse(run.stdout) },
        {
          status: 0,
          result: result('1.1.0'),
        },
      );
      assert.deepEqual(handler.calls, [
        {
          command: 'ADD',
          request: {
            containerId: 'c1',
            ifname: 'net1',
            network: 'underlay',
            netns: '/var/run/netns/cni-1',
            podNamespace: 'web',
            podName: 'web-0',
            podUid: '5f0c2a3e-7d1b-4c1e-9a55-0d6f3b1e2c4a',
            options: { defaultIpv4Pools: ['v4-a', 'v4-b'], defaultIpv6Pools: ['v6-a'], detectConflict: false, detectGateway: true },
          },
        },
      ]);
    });

    it('prints a 1.0.0 result for a 1.0.0 configuration, and forwards the defaults of the options left out', async () => {
      const run = await runStraitIpam({ ...add, CNI_ARGS: 'K8S_POD_NAMESPACE=web;K8S_POD_NAME=web-0' }, network('1.0.0'));
      assert.deepEqual(
        { status: run.status, result: JSON.parse(run.stdout) },
        {
          status: 0,
          result: result('1.0.0'),
        },
      );
      assert.deepEqual(handler.calls, [
        {
          command: 'ADD',
          request: {
            containerId: 'c1',
            ifname: 'net1',
            network: 'underlay',
            netns: '/var/run/netns/cni-1',
            podNamespace: 'web',
            podName: 'web-0',
            options: { defaultIpv4Pools: [], defaultIpv6Pools: [], detectConflict: true, detectGateway: true },
          },
        },
      ]);
    });

    it("prints the service's error as it is: its code, message and details", async () => {
      handler.fail = new IpamError(
        102,
        'pools v4-a, v4-b: every address is taken, reserved or excluded',
        'v4-a: 254 of 254 taken; v4-b: 14 of 14 taken',
      );
      assert.deepEqual(cniError(await runStraitIpam(add, network('1.0.0'))), {
        cniVersion: '1.0.0',
        code: 102,
        msg: 'pools v4-a, v4-b: every address is taken, reserved or excluded',
        details: 'v4-a: 254 of 254 taken; v4-b: 14 of 14 taken',
      });
    });

    it('prints a failure of the service that is not an IPAM error as code 5 with its message', async () => {
      handler.fail = new Error('etcdserver: request timed out');
      assert.deepEqual(cniError(await runStraitIpam(add, network('1.1.0'))), {
        cniVersion: '1.1.0',
        code: 5,
        msg: 'etcdserver: request timed out',
      });
    });
  });

  describe('CHECK', () => {
    const prevResult = {
      cniVersion: '1.1.0',
      ips: [{ address: '10.6.0.2/24', gateway: '10.6.0.1' }],
      routes: [{ dst: '0.0.0.0/0' }],
      dns: {},
    };

    it('forwards the addresses of prevResult and prints nothing when the service agrees', async () => {
      const run = await runStraitIpam(
        { ...add, CNI_COMMAND: 'CHECK' },
        network('1.1.0', { default_ipv4_ippool: ['v4-a'] }, { prevResult }),
      );
      assert.deepEqual({ status: run.status, stdout: run.stdout }, { status: 0, stdout: '' });
      assert.deepEqual(handler.calls, [
        {
          command: 'CHECK',
          request: {
            containerId: 'c1',
            ifname: 'net1',
            network: 'underlay',
            netns: '/var/run/netns/cni-1',
            podNamespace: 'web',
            podName: 'web-0',
            podUid: '5f0c2a3e-7d1b-4c1e-9a55-0d6f3b1e2c4a',
            options: { defaultIpv4Pools: ['v4-a'], defaultIpv6Pools: [], detectConflict: true, detectGateway: true },
            prevResultAddresses: ['10.6.0.2/24'],
          },
        },
      ]);
    });

    it("fails with the service's code when the allocation is not the one the runtime holds", async () => {
      handler.fail = new IpamError(104, 'attachment c1/net1 of network underlay holds 10.6.0.3/24, not 10.6.0.2/24');
      assert.deepEqual(cniError(await runStraitIpam({ ...add, CNI_COMMAND: 'CHECK' }, network('1.1.0', {}, { prevResult }))), {
        cniVersion: '1.1.0',
        code: 104,
        msg: 'attachment c1/net1 of network underlay holds 10.6.0.3/24, not 10.6.0.2/24',
      });
    });
  });

  describe('DEL', () => {
    it('needs neither CNI_NETNS nor the pod, forwards what it has and prints nothing', async () => {
      const run = await runStraitIpam({ CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'c1', CNI_IFNAME: 'net1' }, network('1.1.0'));
      assert.deepEqual({ status: run.status, stdout: run.stdout }, { status: 0, stdout: '' });
      const withPod = await runStraitIpam({ ...add, CNI_COMMAND: 'DEL' }, network('1.0.0'));
      assert.deepEqual({ status: withPod.status, stdout: withPod.stdout }, { status: 0, stdout: '' });
      assert.deepEqual(handler.calls, [
        { command: 'DEL', request: { containerId: 'c1', ifname: 'net1', network: 'underlay' } },
        { command: 'DEL', request: { containerId: 'c1', ifname: 'net1', network: 'underlay', podNamespace: 'web', podName: 'web-0' } },
      ]);
    });
  });

  describe('GC', () => {
    it('forwards cni.dev/valid-attachments and prints nothing', async () => {
      const attachments = [
        { containerID: 'c1', ifname: 'net1' },
        { containerID: 'c2', ifname: 'eth0' },
      ];
      const run = await runStraitIpam(
        { CNI_COMMAND: 'GC', CNI_PATH: '/opt/cni/bin' },
        network('1.1.0', {}, { 'cni.dev/valid-attachments': attachments }),
      );
      assert.deepEqual({ status: run.status, stdout: run.stdout }, { status: 0, stdout: '' });
      assert.deepEqual(handler.calls, [
        {
          command: 'GC',
          request: {
            network: 'underlay',
            validAttachments: [
              { containerId: 'c1', ifname: 'net1' },
              { containerId: 'c2', ifname: 'eth0' },
            ],
          },
        },
      ]);
    });

    // Without the list, "release every allocation not listed" would release all of the network's.
    it('refuses a GC without cni.dev/valid-attachments, or with an entry that is not an attachment, and calls nothing', async () => {
      const env = { CNI_COMMAND: 'GC', CNI_PATH: '/opt/cni/bin' };
      assert.deepEqual(cniError(await runStraitIpam(env, network('1.1.0'))), {
        cniVersion: '1.1.0',
        code: 7,
        msg: 'cni.dev/valid-attachments: missing',
      });
      const odd = network('1.1.0', {}, { 'cni.dev/valid-attachments': [{ containerID: 'c1', ifname: 'net1' }, { containerID: 'c2' }] });
      assert.deepEqual(cniError(await runStraitIpam(env, odd)), {
        cniVersion: '1.1.0',
        code: 7,
        msg: 'cni.dev/valid-attachments[1].ifname: missing',
      });
      assert.deepEqual(handler.calls, []);
    });
  });

  describe('STATUS', () => {
    it('succeeds silently while the service is ready, and fails with code 50 and its reason while it is not', async () => {
      const ready = await runStraitIpam({ CNI_COMMAND: 'STATUS' }, network('1.1.0'));
      assert.deepEqual({ status: ready.status, stdout: ready.stdout }, { status: 0, stdout: '' });
      handler.statusResponse = { ready: false, message: 'IPPool informer not synced' };
      assert.deepEqual(cniError(await runStraitIpam({ CNI_COMMAND: 'STATUS' }, network('1.1.0'))), {
        cniVersion: '1.1.0',
        code: 50,
        msg: `the pool IPAM service on ${socket} is not ready: IPPool informer not synced`,
      });
    });
  });

  describe('the service down', () => {
    it('fails ADD, CHECK, DEL and GC with code 11 (try again later) naming the socket, STATUS with 50', async () => {
      await server.close();
      const absent = `the pool IPAM service is not running: there is no socket ${socket} (ENOENT); try again later`;
      const config = network('1.1.0', {}, { 'cni.dev/valid-attachments': [] });
      for (const env of [add, { ...add, CNI_COMMAND: 'CHECK' }, { ...add, CNI_COMMAND: 'DEL' }, { CNI_COMMAND: 'GC' }]) {
        assert.deepEqual(cniError(await runStraitIpam(env, config)), { cniVersion: '1.1.0', code: 11, msg: absent }, env.CNI_COMMAND);
      }
      assert.deepEqual(cniError(await runStraitIpam({ CNI_COMMAND: 'STATUS' }, config)), { cniVersion: '1.1.0', code: 50, msg: absent });
    });

    // Issue 24: a file at the socket path answered code 11, which a runtime retries for ever.
    it('fails with code 7 naming ipam.socket when the path is a file, a directory or under a file: no retry makes it serve', async () => {
      await server.close();
      const file = join(dir.dir, 'a-file');
      writeFileSync(file, 'not a socket');
      const refusals: [string, string][] = [
        [file, `ipam.socket: a regular file, not the pool IPAM service's unix socket (got ${JSON.stringify(file)})`],
        [dir.dir, `ipam.socket: a directory, not the pool IPAM service's unix socket (got ${JSON.stringify(dir.dir)})`],
        ['/dev/null', 'ipam.socket: a character device, not the pool IPAM service\'s unix socket (got "/dev/null")'],
        [
          join(file, 'ipam.sock'),
          `ipam.socket: a directory of the path is a file, so no service can listen there (ENOTDIR) (got ${JSON.stringify(join(file, 'ipam.sock'))})`,
        ],
      ];
      for (const [path, msg] of refusals) {
        const config = network('1.1.0', { socket: path }, { 'cni.dev/valid-attachments': [] });
        for (const env of [add, { ...add, CNI_COMMAND: 'DEL' }, { CNI_COMMAND: 'GC' }, { CNI_COMMAND: 'STATUS' }]) {
          assert.deepEqual(cniError(await runStraitIpam(env, config)), { cniVersion: '1.1.0', code: 7, msg }, `${env.CNI_COMMAND} ${path}`);
        }
      }
    });

    it('fails with code 11 when the socket is left by a service that died (ECONNREFUSED)', async () => {
      await server.close();
      await staleSocket(socket);
      assert.deepEqual(cniError(await runStraitIpam(add, network('1.1.0'))), {
        cniVersion: '1.1.0',
        code: 11,
        msg: `the pool IPAM service is not running: nothing listens on ${socket} (ECONNREFUSED); try again later`,
      });
    });
  });
});

/**
 * Strait's container image as image/build.sh builds it (docs/image.md): from Debian packages and this
 * build's artefacts, read back by skopeo, unpacked by umoci, and the CLI run from its root filesystem.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/log';
import { serveIpam } from '../../src/pool-ipam/ipam-server';
import { RecordingHandler } from '../cni/recording-handler';
import { type ChartObject, renderChart } from '../support/chart';
import { kernelFeatures, requireCommands, requireRoot, uniqueName } from '../support/kernel';
import { type UnpackedImage, runEntrypoint, unpackImage } from './unpacked-image';

const repo = join(__dirname, '..', '..', '..');
const archive = join(repo, 'build', 'image', 'strait-oci.tar');

/** The OCI labels both build.sh and the Dockerfile give the image (the revision is the commit's). */
const labels = {
  'org.opencontainers.image.title': 'strait',
  'org.opencontainers.image.description':
    'eBPF-accelerated node dataplane agent connecting Kubernetes clusters pod-to-pod, also with overlapping PodCIDRs',
  'org.opencontainers.image.version': '0.1.0',
  'org.opencontainers.image.licenses': 'Apache-2.0',
};

describe('the container image', function () {
  requireRoot(this);
  let image: UnpackedImage | undefined;

  before(function () {
    requireCommands(this, ['mmdebstrap', 'umoci', 'skopeo', 'unshare', 'chroot'], 'sudo bash .ci/setup installs them');
    // Cold, mmdebstrap downloads the Debian packages (about half a minute here); then they are cached.
    this.timeout(10 * 60_000);
    execFileSync('bash', [join(repo, 'image', 'build.sh')], { stdio: ['ignore', 'inherit', 'inherit'] });
    image = unpackImage(archive, '0.1.0');
  });
  after(() => image?.cleanup());

  const unpacked = () => image ?? assert.fail('the image was not unpacked');

  it('is tagged with the version, runs the strait CLI as its entrypoint, and carries the OCI labels', () => {
    const { config } = unpacked();
    assert.deepEqual(config.Entrypoint, ['/usr/local/bin/strait']);
    assert.equal(config.Cmd, undefined);
    assert.deepEqual(config.Env, ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin']);
    const { 'org.opencontainers.image.revision': revision, ...rest } = config.Labels ?? {};
    assert.deepEqual(rest, labels);
    assert.match(revision ?? '', /^[0-9a-f]{40}(-dirty)?$/);
  });

  it('gets the same entrypoint, labels and runtime packages from the Dockerfile', () => {
    // No Docker engine runs here to build the Dockerfile: at least it must not drift from build.sh.
    const dockerfile = readFileSync(join(repo, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
    const label = dockerfile.split('\n').find((l) => l.startsWith('LABEL ')) ?? assert.fail('the Dockerfile has no LABEL');
    const given = Object.fromEntries([...label.matchAll(/([\w.]+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    assert.deepEqual(given, { ...labels, 'org.opencontainers.image.revision': '${REVISION}' });
    assert.match(dockerfile, /^ENTRYPOINT \["\/usr\/local\/bin\/strait"\]$/m);
    assert.match(dockerfile, /^COPY image\/runtime-packages /m);
    // The run stage takes dist/src, not the lab the build stage compiled with it.
    assert.deepEqual(
      dockerfile.split('\n').filter((l) => l.startsWith('COPY --from=build') && /lab/.test(l)),
      [],
    );
  });

  // The lab (lab/, the npm workspace strait-lab) is a test bed, not the product (ARCHITECTURE.md).
  it('holds no lab: no dist/lab, no strait-lab link or bin in node_modules, no lab command', () => {
    const strait = join(unpacked().rootfs, 'opt', 'strait');
    const present = (path: string) => {
      try {
        lstatSync(join(strait, path));
        return true;
      } catch {
        return false;
      }
    };
    assert.deepEqual(readdirSync(join(strait, 'dist')).sort(), ['bpf', 'src']);
    assert.deepEqual(['dist/lab', 'node_modules/strait-lab', 'node_modules/.bin/strait-lab'].filter(present), []);
    const run = runEntrypoint(unpacked(), ['lab', 'status']);
    assert.equal(run.status, 1, run.stdout);
    assert.deepEqual(JSON.parse(run.stderr).value, 'lab');
  });

  it('prints the package version with strait --version', () => {
    const run = runEntrypoint(unpacked(), ['--version']);
    assert.deepEqual(run, { status: 0, stdout: '0.1.0\n', stderr: '' });
  });

  it("finds this kernel's features with strait probe, loading its addon and using its own ip and nft", async () => {
    const run = runEntrypoint(unpacked(), ['probe', '--json', '--reasons']);
    assert.equal(run.status, 0, run.stderr);
    const { reasons, dataplane, encryption, families, ...features } = JSON.parse(run.stdout) as Record<string, unknown>;
    // What every kernel that runs these tests has (test/probe/probe.test.ts); the namespace probes fail
    // without ip, the nftables one without nft, the first ones without the addon and libbpf.
    for (const f of ['bpf', 'btf', 'clsact', 'testRun', 'lpmTrie', 'vxlan', 'vxlanCollectMd', 'policyRouting', 'nftables', 'xfrm']) {
      assert.equal(features[f], true, `${f}: ${JSON.stringify(reasons)}`);
    }
    assert.equal(dataplane, 'ebpf');
    assert.equal(typeof encryption, 'boolean');
    // What each dataplane carries per family (--reasons): the eBPF datapath both, as on this machine.
    const carried = families as Record<'ipv4' | 'ipv6', Record<'ebpf' | 'kernel' | 'ipsec', { carries: boolean }>>;
    assert.deepEqual([carried.ipv4.ebpf.carries, carried.ipv6.ebpf.carries], [true, true]);
    assert.deepEqual(features, (await kernelFeatures()).features, "the image finds what this machine's own probe finds");
  });

  it('documents --kubernetes and --pool-ipam-socket in strait agent --help', () => {
    const run = runEntrypoint(unpacked(), ['agent', '--help']);
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /^Usage: strait agent \[options\]$/m);
    // Commander wraps descriptions at the widest option's column: words apart by any white space.
    assert.match(run.stdout, /^ {2}--kubernetes +watch this node's NodeDataplane on the API\s+server and write its status there/m);
    assert.match(run.stdout, /^ {2}--pool-ipam-socket <path> +with --kubernetes: serve the pool IPAM/m);
  });

  it("installs strait-ipam as the chart's init container does, and the plugin runs on this host from what it copied", async () => {
    const host = mkdtempSync(join(tmpdir(), 'strait-image-host-'));
    try {
      const cniBinDir = join(host, 'opt', 'cni', 'bin');
      const runtimeDir = join(host, 'var', 'lib', 'strait', 'strait-ipam');
      // The init container as helm renders it, its hostPath volumes made directories of this machine.
      const pod = renderChart(['--set', `poolIpam.enabled=true,poolIpam.cniBinDir=${cniBinDir},poolIpam.runtimeDir=${runtimeDir}`]).find(
        (o) => o.kind === 'DaemonSet',
      )!.spec.template.spec;
      const install = (pod.initContainers as ChartObject[]).find((c) => c.name === 'install-strait-ipam')!;
      const volumes = (install.volumeMounts as ChartObject[]).map((m) => {
        const hostPath = (pod.volumes as ChartObject[]).find((v) => v.name === m.name)!.hostPath.path as string;
        mkdirSync(hostPath, { recursive: true });
        return { hostPath, mountPath: m.mountPath as string };
      });
      assert.equal(install.command, undefined);
      const run = runEntrypoint(unpacked(), install.args, volumes);
      assert.equal(run.status, 0, run.stderr);
      const { plugin, runtime } = JSON.parse(run.stdout) as { plugin: string; runtime: string };
      assert.equal(plugin, '/host/cni-bin/strait-ipam', 'the plugin directory as the init container sees it');
      assert.match(runtime, new RegExp(`^${runtimeDir}/strait-ipam-[A-Za-z0-9]{6}$`), "the runtime at the host's own path");

      // On the host, outside the image: its Node.js, loader and libraries from the runtime directory.
      const version = spawnSync(join(cniBinDir, 'strait-ipam'), [], {
        env: { CNI_COMMAND: 'VERSION' },
        input: '{"cniVersion":"1.0.0"}',
        encoding: 'utf8',
      });
      assert.deepEqual(
        { status: version.status, stdout: version.stdout, stderr: version.stderr },
        { status: 0, stdout: '{"cniVersion":"1.0.0","supportedVersions":["1.0.0","1.1.0"]}\n', stderr: '' },
      );
      assert.equal(
        readFileSync(join(runtime, 'node')).equals(readFileSync(join(unpacked().rootfs, 'usr/local/bin/node'))),
        true,
        "the image's Node.js",
      );
      // And it reaches a service over its socket: STATUS of a ready one succeeds silently.
      const socket = join(host, 'run', 'strait', 'ipam.sock');
      const server = await serveIpam({ socket, handler: new RecordingHandler(), log: createLogger('image-test', 'silent') });
      try {
        const status = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
          const child = execFile(join(cniBinDir, 'strait-ipam'), [], { env: { CNI_COMMAND: 'STATUS' } }, (err, stdout) =>
            resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout }),
          );
          child.stdin!.end(
            JSON.stringify({ cniVersion: '1.1.0', name: 'underlay', type: 'macvlan', ipam: { type: 'strait-ipam', socket } }),
          );
        });
        assert.deepEqual(status, { code: 0, stdout: '' });
      } finally {
        await server.close();
      }
    } finally {
      rmSync(host, { recursive: true, force: true });
    }
  });

  it('loads the Kubernetes client for strait agent --kubernetes, then wants a kubeconfig outside a Pod', () => {
    // @kubernetes/client-node is an ES module that Strait require()s: a Node.js older than 20.19 fails
    // here with ERR_REQUIRE_ESM. The agent asks for its API server before it touches the node.
    const pinRoot = join('/sys/fs/bpf', uniqueName('strait-image'));
    // No metrics server: it would listen on the host's loopback (the chroot shares its network).
    const run = runEntrypoint(unpacked(), ['agent', '--kubernetes', '--node', 'n1', '--pin-root', pinRoot, '--metrics-port', '0']);
    assert.deepEqual(run, {
      status: 1,
      stdout: '',
      stderr: '{"error":"no kubeconfig file given and not running in a Pod (KUBERNETES_SERVICE_HOST is not set)"}\n',
    });
    assert.equal(existsSync(pinRoot), false);
  });
});

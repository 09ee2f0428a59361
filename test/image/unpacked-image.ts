/**
 * An OCI image archive as a container runtime would see it: its config read by skopeo (as `skopeo copy`
 * would load it), its layers unpacked by umoci into a root filesystem, and commands run from that root
 * the way the runtime runs the entrypoint: chrooted, with the image's environment and nothing of ours.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The parts of an OCI image config (image-spec config.md) the tests look at. */
interface ImageConfig {
  Entrypoint?: string[];
  Cmd?: string[];
  Env?: string[];
  Labels?: Record<string, string>;
}

export interface UnpackedImage {
  config: ImageConfig;
  rootfs: string;
  cleanup: () => void;
}

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Unpacks `archive` (an oci-archive) at `tag` into a fresh directory; `cleanup` removes it. */
export function unpackImage(archive: string, tag: string): UnpackedImage {
  const reference = `oci-archive:${archive}:${tag}`;
  const config = (JSON.parse(execFileSync('skopeo', ['inspect', '--config', reference], { encoding: 'utf8' })) as { config: ImageConfig })
    .config;
  const dir = mkdtempSync(join(tmpdir(), 'strait-image-'));
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  try {
    const layout = join(dir, 'layout');
    mkdirSync(layout);
    execFileSync('tar', ['-xf', archive, '-C', layout]);
    execFileSync('umoci', ['unpack', '--image', `${layout}:${tag}`, join(dir, 'bundle')], { stdio: ['ignore', 'ignore', 'pipe'] });
    rmSync(layout, { recursive: true });
  } catch (err) {
    cleanup();
    throw err;
  }
  return { config, rootfs: join(dir, 'bundle', 'rootfs'), cleanup };
}

/** A directory of this machine mounted into the container at `mountPath` (a pod's hostPath volume). */
export interface HostVolume {
  hostPath: string;
  mountPath: string;
}

/**
 * Runs the image's entrypoint with `args` in its root filesystem, in a mount namespace of its own: the
 * root is a mount point (as in a container; `ip netns add` needs one), with this machine's /proc, /sys
 * (bpffs included) and /dev, empty /run and /tmp, and `volumes`. The environment is the image's Env alone.
 */
export function runEntrypoint(image: UnpackedImage, args: string[], volumes: HostVolume[] = []): Run {
  const enter = [
    'set -e; root=$1; shift',
    'mount --bind "$root" "$root"',
    'for d in proc sys dev; do mount --rbind "/$d" "$root/$d"; done',
    'for d in run tmp; do mount -t tmpfs -o mode=1777 tmpfs "$root/$d"; done',
    // Pairs of host path and mount path, then "--", then the command.
    'while [ "$1" != -- ]; do mkdir -p "$root$2" && mount --bind "$1" "$root$2"; shift 2; done; shift',
    'exec chroot "$root" "$@"',
  ].join('\n');
  const argv = [...volumes.flatMap((v) => [v.hostPath, v.mountPath]), '--', ...(image.config.Entrypoint ?? []), ...args];
  const env = Object.fromEntries((image.config.Env ?? []).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
  const r = spawnSync('unshare', ['--mount', '--propagation', 'private', '--fork', 'sh', '-c', enter, 'sh', image.rootfs, ...argv], {
    encoding: 'utf8',
    env,
    timeout: 60_000,
  });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

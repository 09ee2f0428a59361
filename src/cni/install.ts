/**
 * `strait pool-ipam install-plugin`: puts `strait-ipam` into a host's CNI plugin directory, as the Helm
 * chart's init container runs it from the agent's image. The plugin is JavaScript, and the host may have
 * no Node.js, or a libc the image's Node.js was not built for: so a runtime directory on the host gets
 * this process's Node.js, the dynamic loader and libraries it links (as `ldd` finds them) and the compiled
 * dist/src, and the plugin directory gets a /bin/sh launcher that runs that Node.js through that loader.
 * Nothing of the host is used but /bin/sh and the kernel.
 *
 * Atomic for a runtime calling the plugin meanwhile: each install copies into a directory of its own,
 * runs the result once (CNI VERSION) before anything points at it, then renames a new launcher over the
 * old one. Runtime directories other than the new one and the one the replaced launcher named are
 * removed (a call of the old plugin may still be running from that one).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, rmdirSync } from 'node:fs';
import { basename, isAbsolute, join, relative, resolve } from 'node:path';
import { InputError, StateError } from '../errors';
import { cniErrorCodes } from '../pool-ipam/protocol';
import { latestCniVersion, versionResult } from './network-config';
import { writeFileAtomic, writeNewFile } from '../store/atomic-file';
import { readRegularFile } from '../store/regular-file';

const pluginName = 'strait-ipam';
/** Each install's directory in the runtime directory: `strait-ipam-XXXXXX`. */
const runtimePrefix = `${pluginName}-`;

export interface PluginInstall {
  /** The launcher in the CNI plugin directory. */
  plugin: string;
  /** The runtime directory it runs. */
  runtime: string;
  /** Runtime directories of earlier installs removed. */
  removed: string[];
}

interface SharedObjects {
  /** The program interpreter (PT_INTERP), absent for a static executable. */
  loader?: string;
  /** The libraries it loads, by the file each resolves to. */
  libraries: string[];
}

/** What `ldd` says `executable` loads: `name => /path (0x...)` lines, and the loader's `/path (0x...)`. */
function sharedObjects(executable: string): SharedObjects {
  const run = spawnSync('ldd', [executable], { encoding: 'utf8' });
  if (run.error) throw new StateError(`cannot run ldd to find what ${executable} loads: ${run.error.message}`);
  // A static executable: glibc's ldd says so on stdout and exits 1.
  if (/not a dynamic executable|statically linked/.test(run.stdout + run.stderr)) return { libraries: [] };
  if (run.status !== 0) throw new StateError(`ldd ${executable} failed: ${run.stderr.trim()}`);
  const libraries: string[] = [];
  let loader: string | undefined;
  for (const line of run.stdout.split('\n')) {
    const library = /^\s*\S+ => (\/\S+) \(0x[0-9a-f]+\)$/.exec(line);
    const interpreter = /^\s*(\/\S+) \(0x[0-9a-f]+\)$/.exec(line);
    if (library) libraries.push(library[1]!);
    else if (interpreter) loader = interpreter[1]!;
    else if (/=> not found/.test(line)) throw new StateError(`${executable} needs a library ldd cannot find: ${line.trim()}`);
  }
  if (loader === undefined) throw new StateError(`ldd ${executable} names no program interpreter:\n${run.stdout}`);
  return { loader, libraries };
}

const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/** The launcher's text: runs `runtime`'s Node.js (through its own loader, if it has one) on the plugin. */
function launcherText(runtime: string, loader: string | undefined): string {
  const q = (path: string) => shellQuote(join(runtime, path));
  const node = loader === undefined ? q('node') : `${q(join('lib', basename(loader)))} --library-path ${q('lib')} ${q('node')}`;
  return [
    '#!/bin/sh',
    `# ${pluginName}, the CNI IPAM plugin of Strait's pool IPAM, installed by \`strait pool-ipam install-plugin\`:`,
    "# the Node.js of the agent's image with its own loader and libraries, in the runtime directory below.",
    `exec ${node} ${q('dist/src/cni/main.js')} "$@"`,
    '',
  ].join('\n');
}

/**
 * What `strait-ipam` becomes when Strait is uninstalled (uninstallPlugin): the pool IPAM and its records
 * are gone, so a DEL or a CHECK has nothing to release and succeeds (a runtime could otherwise never
 * remove a pod that used it: every DEL would wait for a service that will not come back), a GC too, and
 * an ADD is refused with CNI's code 50 (the plugin is not available).
 */
const uninstalledText = [
  '#!/bin/sh',
  `# ${pluginName} after Strait was uninstalled (src/cni/install.ts uninstallPlugin): DEL, CHECK and GC of the`,
  '# pods that used it succeed with nothing to release; ADD and STATUS say it is gone. Delete this file once no',
  '# network configuration names it.',
  'case "$CNI_COMMAND" in',
  `  ADD|STATUS) echo ${shellQuote(JSON.stringify({ cniVersion: latestCniVersion, code: cniErrorCodes.pluginNotAvailable, msg: "Strait's pool IPAM was uninstalled from this cluster" }))}; exit 1 ;;`,
  `  VERSION) echo ${shellQuote(JSON.stringify(versionResult('')))} ;;`,
  'esac',
  '',
].join('\n');

/** The runtime directory an installed launcher runs, if it is one of ours. */
function runtimeOf(launcher: string): string | undefined {
  const text = readRegularFile(launcher);
  if (text === undefined) return undefined;
  const match = /'([^']+)\/dist\/src\/cni\/main\.js'/.exec(text);
  return match?.[1];
}

function checkDirectory(flag: string, value: string): string {
  if (!isAbsolute(value)) throw new InputError(flag, value, 'must be an absolute path');
  return resolve(value);
}

export interface InstallOptions {
  cniBinDir: string;
  runtimeDir: string;
  /** The Node.js to copy (default: this process's). */
  node?: string;
  /** The compiled dist/src to copy (default: this module's). */
  distSrc?: string;
}

export function installPlugin(options: InstallOptions): PluginInstall {
  const cniBinDir = checkDirectory('--cni-bin-dir', options.cniBinDir);
  const runtimeDir = checkDirectory('--runtime-dir', options.runtimeDir);
  const node = options.node ?? process.execPath;
  const distSrc = options.distSrc ?? resolve(__dirname, '..');
  // The image's own files: a runtime directory among them would be removed with the next install's cleanup.
  const installed = resolve(distSrc, '..', '..');
  if (!relative(installed, runtimeDir).startsWith('..'))
    throw new InputError('--runtime-dir', options.runtimeDir, `must be outside ${installed}, where Strait itself is installed`);
  mkdirSync(cniBinDir, { recursive: true });
  mkdirSync(runtimeDir, { recursive: true });

  const { loader, libraries } = sharedObjects(node);
  const runtime = mkdtempSync(join(runtimeDir, runtimePrefix));
  try {
    chmodSync(runtime, 0o755);
    mkdirSync(join(runtime, 'lib'));
    // By the names the loader looks for (ldd's left column is the soname; the file may be a versioned name).
    for (const file of [...(loader ? [loader] : []), ...libraries]) copyFileSync(file, join(runtime, 'lib', basename(file)));
    copyFileSync(node, join(runtime, 'node'));
    chmodSync(join(runtime, 'node'), 0o755);
    cpSync(distSrc, join(runtime, 'dist', 'src'), { recursive: true });
    const text = launcherText(runtime, loader);
    // The copy must answer before any runtime is pointed at it.
    const staged = join(runtime, pluginName);
    writeNewFile(staged, text, 0o755);
    const version = spawnSync(staged, [], {
      env: { CNI_COMMAND: 'VERSION' },
      input: '{"cniVersion":"1.1.0"}',
      encoding: 'utf8',
      timeout: 30_000,
    });
    if (version.status !== 0 || !/"supportedVersions"/.test(version.stdout)) {
      throw new StateError(
        `the copied plugin does not run (exit ${version.status}${version.error ? `, ${version.error.message}` : ''}): ${(version.stderr || version.stdout).trim()}`,
      );
    }
    rmSync(staged);
    const plugin = join(cniBinDir, pluginName);
    const previous = runtimeOf(plugin);
    writeFileAtomic(plugin, text, 0o755, String(process.pid));
    const keep = new Set([runtime, previous]);
    const removed = readdirSync(runtimeDir)
      .filter((n) => n.startsWith(runtimePrefix))
      .map((n) => join(runtimeDir, n))
      .filter((d) => !keep.has(d))
      .sort();
    for (const dir of removed) rmSync(dir, { recursive: true, force: true });
    return { plugin, runtime, removed };
  } catch (err) {
    rmSync(runtime, { recursive: true, force: true });
    throw err;
  }
}

export interface PluginUninstall {
  /** The launcher replaced by the uninstalled plugin (absent: there was none of ours). */
  plugin?: string;
  /** A file of that name that is not ours, left as it was. */
  foreign?: string;
  /** Runtime directories removed. */
  removed: string[];
}

/**
 * Takes strait-ipam off a node (the agent does it when the release is uninstalled): its runtime
 * directories go, and the launcher, if it is ours, is replaced by a rename with the few lines that let
 * the pods that used it be deleted (uninstalledText). Running it again changes nothing.
 */
export function uninstallPlugin(options: Pick<InstallOptions, 'cniBinDir' | 'runtimeDir'>): PluginUninstall {
  const cniBinDir = checkDirectory('--pool-ipam-plugin-dir', options.cniBinDir);
  const runtimeDir = checkDirectory('--pool-ipam-runtime-dir', options.runtimeDir);
  const plugin = join(cniBinDir, pluginName);
  const text = readRegularFile(plugin);
  const ours = text !== undefined && (text === uninstalledText || runtimeOf(plugin) !== undefined);
  if (ours && text !== uninstalledText) writeFileAtomic(plugin, uninstalledText, 0o755, String(process.pid));
  const removed = existsSync(runtimeDir)
    ? readdirSync(runtimeDir)
        .filter((n) => n.startsWith(runtimePrefix))
        .map((n) => join(runtimeDir, n))
        .sort()
    : [];
  for (const dir of removed) rmSync(dir, { recursive: true, force: true });
  // The directory itself, if nothing else is in it.
  if (existsSync(runtimeDir) && readdirSync(runtimeDir).length === 0) rmdirSync(runtimeDir);
  return { ...(ours ? { plugin } : text !== undefined ? { foreign: plugin } : {}), removed };
}

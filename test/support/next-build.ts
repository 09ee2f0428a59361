/**
 * "The next release" for the upgrade tests: this build with a field appended to two map values, one that
 * a spec fills (struct strait_peer, +4 bytes) and one that holds the datapath's state (struct
 * strait_snat_entry, the transit SNAT flows, +8), as a release that adds a field would (the rule:
 * docs/datapath.md, "Changing a map's layout"). Made in build/upgrade-next/, under the repository so its
 * code finds node_modules: this build's dist/src with layout.js transpiled from the patched layout.ts,
 * bpf/ compiled from the patched headers by the project's Makefile, the native addon linked, and its
 * package.json with the version `<this one>-next`. A patch whose
 * anchor is gone (the struct was edited) throws, naming it: update the anchor with the struct.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

const repo = join(__dirname, '..', '..', '..');

/** `text` with `from` replaced by `to`, where `from` must occur exactly once. */
function patch(text: string, file: string, from: string, to: string): string {
  const at = text.indexOf(from);
  if (at < 0 || text.indexOf(from, at + 1) >= 0) throw new Error(`next build: ${file} must hold exactly one ${JSON.stringify(from)}`);
  return text.slice(0, at) + to + text.slice(at + from.length);
}

/** The C structs with their field appended. */
function patchHeader(text: string): string {
  const file = 'bpf/lib/common.h';
  const peerEnd = '\tstruct strait_in6 endpoint6;           /* the tunnel address of a peering over IPv6 (appended) */\n};';
  const snatEnd = '\t__u64 closed_ns; /* reverse: when the flow closed (bpf_ktime_get_ns); forward: 0 */\n};';
  text = patch(text, file, peerEnd, peerEnd.replace('\n};', "\n\t__u32 _pad_next; /* the next release's field */\n};"));
  return patch(text, file, snatEnd, snatEnd.replace('\n};', "\n\t__u64 _pad_next; /* the next release's field */\n};"));
}

/** The codecs with the same fields (`_pad` fields are written as zero, so no other code changes). */
function patchLayout(text: string): string {
  const file = 'src/dataplane/ebpf/layout.ts';
  text = patch(text, file, 'export const peer = struct({', 'export const peer = cstruct({');
  text = patch(text, file, '  endpoint6: ipv6,\n});', '  endpoint6: ipv6,\n  _padNext: u32,\n});');
  return patch(
    text,
    file,
    'const snatEntry = cstruct({ addr: ipv4, port: be16, flags: u16, _pad: u32, closedNs: u64 });',
    'const snatEntry = cstruct({ addr: ipv4, port: be16, flags: u16, _pad: u32, closedNs: u64, _padNext: u64 });',
  );
}

/** Builds the next release (a few seconds); returns the path of its CLI (`node <it> agent ...`). */
export function buildNextRelease(): string {
  const out = join(repo, 'build', 'upgrade-next');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(join(out, 'build'), { recursive: true });
  cpSync(join(repo, 'dist', 'src'), join(out, 'dist', 'src'), { recursive: true });
  const layout = ts.transpileModule(patchLayout(readFileSync(join(repo, 'src', 'dataplane', 'ebpf', 'layout.ts'), 'utf8')), {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
  });
  writeFileSync(join(out, 'dist', 'src', 'dataplane', 'ebpf', 'layout.js'), layout.outputText);
  cpSync(join(repo, 'bpf'), join(out, 'bpf'), { recursive: true });
  const header = join(out, 'bpf', 'lib', 'common.h');
  writeFileSync(header, patchHeader(readFileSync(header, 'utf8')));
  // The Makefile writes to ../dist/bpf: the next release's own.
  execFileSync('make', ['-s', '-C', join(out, 'bpf')], { stdio: ['ignore', 'ignore', 'inherit'] });
  symlinkSync(join(repo, 'build', 'Release'), join(out, 'build', 'Release'));
  // Its own version, which its logs and `strait version` say.
  const manifest = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { version: string };
  writeFileSync(join(out, 'package.json'), JSON.stringify({ ...manifest, version: `${manifest.version}-next` }, null, 2));
  return join(out, 'dist', 'src', 'cli', 'main.js');
}

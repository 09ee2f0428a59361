/** Test helpers for real-kernel tests: root and kernel checks, test objects, and cleaned-up namespaces and pins. */
import { randomBytes } from 'node:crypto';
import { accessSync, constants, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ensureBpffs } from '../../src/native';
import { CommandError, ip, run } from '../../src/kernel/command';
import { createNetns, deleteNetns, withThrowawayNetns } from '../../src/kernel/netns';
import type { Feature, ProbeReport } from '../../src/probe/features';
import { probeKernel } from '../../src/probe/probe';
import { type EchoOutcome, type PingCount, echoOutcome, pingArgv } from '../../lab/src/ping';

const isRoot = process.getuid?.() === 0;

/**
 * A strict run (CI=true, as `.ci/run` and the VM suite set) fails a test that cannot run here instead of
 * skipping it: a CI run that skipped the kernel tests would pass while testing nothing.
 */
const strictRun = ['true', '1'].includes(process.env.CI ?? '');

/** Skips the running test or suite hook, saying why; in a strict run, fails with the same reason. */
export function cannotRunHere(ctx: Mocha.Context, reason: string): never {
  if (strictRun) throw new Error(`cannot run here: ${reason} (CI=true: a skip is a failure)`);
  process.stdout.write(`      skipped: ${reason}\n`);
  ctx.skip();
}

/** Skips the suite (with the reason printed) when not root; fails it in a strict run. */
export function requireRoot(suite: Mocha.Suite): void {
  suite.beforeAll(function () {
    if (!isRoot) cannotRunHere(this, 'needs root (BPF, network namespaces)');
  });
}

/** Skips the running test or suite hook when a command is not on PATH, saying how to install it; fails in a strict run. */
export function requireCommands(ctx: Mocha.Context, commands: string[], install: string): void {
  const dirs = (process.env.PATH ?? '').split(':').filter((d) => d !== '');
  const onPath = (command: string) =>
    dirs.some((dir) => {
      try {
        accessSync(join(dir, command), constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
  const missing = commands.filter((c) => !onPath(c));
  if (missing.length > 0) cannotRunHere(ctx, `needs ${missing.join(', ')} (${install})`);
}

let probed: Promise<ProbeReport> | undefined;
/** This kernel's features, probed once per test process, in a namespace of its own (not the host's). */
export const kernelFeatures = (): Promise<ProbeReport> => (probed ??= withThrowawayNetns('strait-test-probe', (ns) => probeKernel(ns)));

/**
 * For tests that need a kernel with (`has`) or without (`lacks`) some features, such as ESP: their titles
 * carry a tag (`@esp`, `@no-esp`) by which each run selects its own (the host run leaves out `@esp`,
 * the VM run `@no-esp`). Run on the wrong kernel anyway, the test skips, or fails in a strict run.
 */
export async function requireKernel(ctx: Mocha.Context, condition: { has?: Feature[]; lacks?: Feature[] }): Promise<void> {
  const report = await kernelFeatures();
  const missing = (condition.has ?? []).filter((f) => !report.features[f]);
  const present = (condition.lacks ?? []).filter((f) => report.features[f]);
  if (missing.length > 0) cannotRunHere(ctx, `needs a kernel with ${missing.join(', ')} (npm run test:vm boots one)`);
  if (present.length > 0) cannotRunHere(ctx, `needs a kernel without ${present.join(', ')}`);
}

/** A BPF object of the test suite (test/bpf/NAME.c, built by `npm run build:bpf`). */
export const testObject = (name: string) => join(__dirname, '..', '..', 'bpf', 'test', `${name}.o`);

export const uniqueName = (prefix: string) => `${prefix}-${process.pid}-${randomBytes(3).toString('hex')}`;

/**
 * A fresh namespace for each test of the suite it is called in, deleted after the test (also when it
 * fails); the getter gives the current test's.
 */
export function netnsPerTest(prefix: string): () => string {
  let netns = '';
  beforeEach(() => {
    netns = uniqueName(prefix);
    createNetns(netns);
  });
  afterEach(() => deleteNetns(netns));
  return () => netns;
}

/** A fresh directory on bpffs for one test's pins; removed by the returned cleanup. */
export function tempPinDir(): { dir: string; cleanup: () => void } {
  ensureBpffs();
  const dir = join('/sys/fs/bpf', uniqueName('strait-test'));
  mkdirSync(dir);
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Two namespaces joined by a veth pair, addresses 10.213.0.1/24 (left) and .2 (right), links up.
 * `cleanup` deletes both namespaces, which removes the links, qdiscs and filters in them.
 */
export function vethPair(): { left: string; right: string; cleanup: () => void } {
  const left = uniqueName('strait-test-l');
  const right = uniqueName('strait-test-r');
  createNetns(left);
  try {
    createNetns(right);
    ip(['link', 'add', 'veth0', 'type', 'veth', 'peer', 'name', 'veth1', 'netns', right], left);
    ip(['addr', 'add', '10.213.0.1/24', 'dev', 'veth0'], left);
    ip(['addr', 'add', '10.213.0.2/24', 'dev', 'veth1'], right);
    for (const [ns, dev] of [
      [left, 'veth0'],
      [right, 'veth1'],
      [left, 'lo'],
      [right, 'lo'],
    ] as const)
      ip(['link', 'set', dev, 'up'], ns);
  } catch (err) {
    deleteNetns(left);
    deleteNetns(right);
    throw err;
  }
  return {
    left,
    right,
    cleanup: () => {
      deleteNetns(left);
      deleteNetns(right);
    },
  };
}

/**
 * `count` pings from `ns` to `address`, 0.2 s apart, each given at least 1 s for its reply: how many of
 * them went out and were answered (see echoOutcome). Throws when ping gives no answer about the path (a
 * missing namespace, a bad address, a send error): a "dropped" check must see ping's own "no reply".
 */
export function ping(ns: string, address: string, count = 3): PingCount {
  const argv = ['ip', 'netns', 'exec', ns, ...pingArgv(address, { count, intervalS: 0.2, waitS: 1 })];
  let outcome: EchoOutcome;
  try {
    outcome = echoOutcome(0, run(argv), '', count);
  } catch (err) {
    if (!(err instanceof CommandError)) throw err;
    outcome = echoOutcome(err.status ?? -1, err.stdout, err.stderr, count);
  }
  return { transmitted: outcome.transmitted, received: outcome.received };
}

/** Test helpers for real-kernel tests: root checks, test objects, and cleaned-up namespaces and pins. */
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ensureBpffs } from '../../src/bpf';
import { ip, run } from '../../src/kernel/command';
import { createNetns, deleteNetns } from '../../src/kernel/netns';

export const isRoot = process.getuid?.() === 0;

/** Skips the suite (with the reason printed by mocha) when not root. */
export function requireRoot(suite: Mocha.Suite): void {
  suite.beforeAll(function () {
    if (!isRoot) this.skip();
  });
}

/** A BPF object of the test suite (test/bpf/NAME.c, built by `npm run build:bpf`). */
export const testObject = (name: string) => join(__dirname, '..', '..', 'bpf', 'test', `${name}.o`);

export const uniqueName = (prefix: string) => `${prefix}-${process.pid}-${randomBytes(3).toString('hex')}`;

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
    for (const [ns, dev] of [[left, 'veth0'], [right, 'veth1'], [left, 'lo'], [right, 'lo']] as const) ip(['link', 'set', dev, 'up'], ns);
  } catch (err) {
    deleteNetns(left);
    deleteNetns(right);
    throw err;
  }
  return { left, right, cleanup: () => { deleteNetns(left); deleteNetns(right); } };
}

/**
 * Whether a ping from `ns` to `address` gets an answer. Up to 3 packets 200 ms apart (a neighbour entry
 * left FAILED by a test that dropped ARP needs a retry); bounded to about 1.5 s.
 */
export function pingOnce(ns: string, address: string): boolean {
  try {
    run(['ip', 'netns', 'exec', ns, 'ping', '-c', '3', '-i', '0.2', '-w', '2', '-W', '1', '-q', address]);
    return true;
  } catch {
    return false;
  }
}

/**
 * Tells a reconciler whether the kernel state it owns may have changed since it last looked, from the
 * kernel's own change events rather than by reading everything again: `ip monitor` (links, addresses,
 * routes, rules, neighbours), `bridge monitor fdb`, `ip xfrm monitor` and `nft monitor`, each a child
 * process in the node's namespace printing a line per change. Reading the whole state costs several
 * processes; most reconciles find nothing to do, so they can be skipped while nothing was printed.
 *
 * Our own writes are printed too: the reconcile after a change runs again, finds nothing, and writes
 * nothing, after which it is quiet. A monitor that fails or exits makes every call say "changed", so
 * the caller falls back to reading every time.
 */
import { type ChildProcess, spawn } from 'node:child_process';

export class KernelChangeMonitor {
  private readonly children: ChildProcess[] = [];
  private changed = true;
  private broken = false;

  /** `netns`: a namespace by name, as for `ip -n`; default: ours. */
  constructor(netns?: string) {
    const inNetns = (argv: string[]) => (netns === undefined ? argv : ['ip', 'netns', 'exec', netns, ...argv]);
    const ns = netns === undefined ? [] : ['-n', netns];
    for (const argv of [['ip', ...ns, 'monitor', 'all'], ['ip', ...ns, 'xfrm', 'monitor'], inNetns(['bridge', 'monitor', 'fdb']), inNetns(['nft', 'monitor'])]) {
      // The parent-death signal ends the monitor with the agent, even when the agent is killed: an
      // orphan would hold the node's namespace alive after `ip netns del`.
      const child = spawn('setpriv', ['--pdeathsig', 'KILL', ...argv], { stdio: ['ignore', 'pipe', 'ignore'] });
      child.stdout!.on('data', () => {
        this.changed = true;
      });
      child.on('error', () => {
        this.broken = true;
      });
      child.on('exit', () => {
        this.broken = true;
      });
      this.children.push(child);
    }
  }

  /** Whether anything may have changed since the last call (true the first time). */
  takeChanged(): boolean {
    const changed = this.changed || this.broken;
    this.changed = false;
    return changed;
  }

  close(): void {
    for (const child of this.children) {
      child.removeAllListeners('exit');
      child.kill();
    }
  }
}

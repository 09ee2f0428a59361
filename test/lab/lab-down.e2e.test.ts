/**
 * `strait-lab down` after a crash, and twice: `lab up` killed half-way (its controllers and agents, started
 * detached, keep running; one agent has died too and left its pid file) must leave nothing behind once
 * `lab down` has run, and a second `lab down` finds nothing and still exits 0.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { labPinRoot } from '../../lab/src/names';
import { labNamespaces } from '../../lab/src/network';
import { isAlive, knownProcesses, processPid } from '../../lab/src/processes';
import { requireRoot } from '../support/kernel';
import { labSuiteHooks } from '../support/lab-suite';

const runDir = `/run/strait/lab-test-${process.pid}`;
const cli = join(__dirname, '..', '..', 'lab', 'src', 'main.js');
const lines: string[] = [];
const say = (line: string) => lines.push(line);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const labDownCli = () => spawnSync(process.execPath, [cli, '--run-dir', runDir, 'down'], { encoding: 'utf8', timeout: 60_000 });

describe('strait-lab down after a crash (real kernel, real processes)', function () {
  requireRoot(this);
  this.timeout(120_000);
  labSuiteHooks(runDir, lines, say);

  it('removes every process, namespace, pin and file of a lab whose `up` was killed half-way; run again, it finds nothing and exits 0', async () => {
    const up = spawn(process.execPath, [cli, '--run-dir', runDir, 'up', '--dataplane', 'ebpf'], { stdio: 'ignore' });
    const exited = new Promise((resolve) => up.on('exit', resolve));
    // Half-way: every agent started and some have pinned their maps, the peerings not programmed yet.
    for (const deadline = Date.now() + 30_000; ; await sleep(20)) {
      assert.ok(Date.now() < deadline, 'lab up started no agent in 30 s');
      if (knownProcesses(runDir).filter((n) => n.startsWith('agent-')).length === 6 && existsSync(labPinRoot)) break;
    }
    up.kill('SIGKILL');
    await exited;
    // One agent dies as well, leaving its pid file.
    const crashed = processPid(runDir, 'agent-a-gw')!;
    process.kill(crashed, 'SIGKILL');
    for (let i = 0; i < 100 && isAlive(crashed); i++) await sleep(10);
    const running = knownProcesses(runDir)
      .map((n) => processPid(runDir, n)!)
      .filter(isAlive);
    // 3 controllers, 6 echo servers (one per pod) and the 5 agents left: they outlived lab up.
    assert.equal(running.length, 3 + 6 + 5, `every other lab process outlived lab up: ${knownProcesses(runDir).join(', ')}`);
    const namespaces = labNamespaces().length;
    assert.ok(namespaces > 0);

    const down = labDownCli();
    assert.equal(down.status, 0, down.stderr);
    assert.equal(down.stdout.trim(), `lab down: ${running.length} processes stopped, ${namespaces} namespaces removed`);
    assert.deepEqual(running.filter(isAlive), [], 'every lab process is gone');
    assert.deepEqual(labNamespaces(), []);
    assert.equal(existsSync(labPinRoot), false, 'no pin is left');
    assert.equal(existsSync(runDir), false, 'no run directory is left');

    const again = labDownCli();
    assert.equal(again.status, 0, again.stderr);
    assert.equal(again.stdout.trim(), 'lab down: 0 processes stopped, 0 namespaces removed');
  });
});

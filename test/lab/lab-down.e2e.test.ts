/**
 * `strait-lab down` after a crash, and twice: `lab up` killed half-way (its controllers and agents, started
 * detached under their supervisors, keep running), then an agent crashes (its supervisor restarts it after
 * the delay) and an echo server dies (unsupervised: it stays dead and leaves its pid file). `lab down`
 * must leave nothing behind, supervisors and their children included, and a second `lab down` finds
 * nothing and still exits 0.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { labPinRoot } from '../../lab/src/names';
import { labNamespaces } from '../../lab/src/network';
import { childPid, isAlive, knownProcesses, processPid } from '../../lab/src/processes';
import { defaultRestartPolicy } from '../../lab/src/restart-backoff';
import { requireRoot } from '../support/kernel';
import { labSuiteHooks } from '../support/lab-suite';
import { crashChild, restartLines, runningChild } from '../support/supervised';

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
    const supervised = knownProcesses(runDir).filter((n) => n.startsWith('agent-') || n.startsWith('controller-'));
    assert.equal(supervised.length, 6 + 3);
    for (const name of supervised) await runningChild(runDir, name);
    // An agent crashes: its supervisor starts it again after the first delay.
    const { crashed, restarted, downMs } = await crashChild(runDir, 'agent-a-gw');
    assert.ok(downMs >= defaultRestartPolicy.firstDelayMs, `restarted ${downMs} ms after the crash, after the first delay`);
    assert.deepEqual(
      restartLines(runDir, 'agent-a-gw').map(({ signal, delayMs, restarts }) => ({ signal, delayMs, restarts })),
      [{ signal: 'SIGKILL', delayMs: defaultRestartPolicy.firstDelayMs, restarts: 1 }],
    );
    // An echo server dies as well, leaving its pid file: nothing restarts it.
    const echo = knownProcesses(runDir).find((n) => n.startsWith('echo-'))!;
    const dead = processPid(runDir, echo)!;
    process.kill(dead, 'SIGKILL');
    for (let i = 0; i < 100 && isAlive(dead); i++) await sleep(10);
    const alive = knownProcesses(runDir).filter((n) => isAlive(processPid(runDir, n)!));
    // 3 controllers, 6 agents (the crashed one back) and 5 of the 6 echo servers: they outlived lab up.
    assert.equal(alive.length, 3 + 6 + 5, `every other lab process outlived lab up: ${knownProcesses(runDir).join(', ')}`);
    // Every process, each supervised one's supervisor and child.
    const running = [...alive.map((n) => processPid(runDir, n)!), ...supervised.map((n) => childPid(runDir, n)!)].filter(isAlive);
    assert.equal(running.length, 3 + 6 + 5 + 9);
    assert.ok(running.includes(restarted) && !running.includes(crashed));
    const namespaces = labNamespaces().length;
    assert.ok(namespaces > 0);

    const down = labDownCli();
    assert.equal(down.status, 0, down.stderr);
    assert.equal(down.stdout.trim(), `lab down: ${alive.length} processes stopped, ${namespaces} namespaces removed`);
    assert.deepEqual(running.filter(isAlive), [], 'every lab process is gone');
    assert.deepEqual(labNamespaces(), []);
    assert.equal(existsSync(labPinRoot), false, 'no pin is left');
    assert.equal(existsSync(runDir), false, 'no run directory is left');

    const again = labDownCli();
    assert.equal(again.status, 0, again.stderr);
    assert.equal(again.stdout.trim(), 'lab down: 0 processes stopped, 0 namespaces removed');
  });
});

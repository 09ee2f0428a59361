/**
 * The lab's supervisors in a running lab (real kernel, real processes): an agent whose process is killed
 * (a crash, SIGKILL of its child) is started again by its supervisor after the first delay (1 s), and a
 * second crash within 10 s waits twice as long, as the kubelet's CrashLoopBackOff; the restarted agent
 * applies its node's spec again and the lab converges. A crashed controller comes back too. A deliberate
 * stop (stopProcess) restarts nothing. Delays are asserted as lower bounds only: how late a restart may
 * come is a benchmark's question.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { labUp, waitForConvergence } from '../../lab/src/lab';
import { defaultTopologyPath } from '../../lab/src/names';
import { childPid, isAlive, processPid, stopProcess } from '../../lab/src/processes';
import { defaultRestartPolicy, restartResetMs } from '../../lab/src/restart-backoff';
import { requireRoot } from '../support/kernel';
import { heartbeatOf, labSuiteHooks } from '../support/lab-suite';
import { crashChild, restartLines } from '../support/supervised';
import { waitFor } from '../support/wait';

const runDir = `/run/strait/lab-test-${process.pid}`;
const lines: string[] = [];
const say = (line: string) => lines.push(line);
const { firstDelayMs } = defaultRestartPolicy;

describe('lab supervisors (real kernel, real processes)', function () {
  requireRoot(this);
  this.timeout(240_000);
  labSuiteHooks(runDir, lines, say);

  it('restart a crashed agent after 1 s and after 2 s when it crashes again within 10 s, and it serves its node again; a crashed controller comes back; a stop restarts nothing', async () => {
    const topology = await labUp(defaultTopologyPath, { runDir, dataplane: 'ebpf', say });
    const agent = 'agent-a-w1';
    const supervisor = processPid(runDir, agent);

    // 1. Two crashes in a row: the second comes seconds after the restart, well within the 10 s that reset the delay.
    const first = await crashChild(runDir, agent);
    const second = await crashChild(runDir, agent);
    const ran = restartLines(runDir, agent)[1]?.ranMs ?? Infinity;
    assert.ok(ran < restartResetMs, `the second crash came within 10 s of the restart (${ran} ms)`);
    assert.ok(first.downMs >= firstDelayMs, `the first restart came after the first delay (${first.downMs} ms)`);
    assert.ok(second.downMs >= 2 * firstDelayMs, `the second restart came after twice the first delay (${second.downMs} ms)`);
    process.stdout.write(`      agent crashed twice: restarted after ${first.downMs} ms, then after ${second.downMs} ms\n`);
    assert.deepEqual(
      restartLines(runDir, agent).map(({ msg, name, signal, delayMs, restarts }) => ({ msg, name, signal, delayMs, restarts })),
      [
        { msg: 'restarting after crash', name: agent, signal: 'SIGKILL', delayMs: firstDelayMs, restarts: 1 },
        { msg: 'restarting after crash', name: agent, signal: 'SIGKILL', delayMs: 2 * firstDelayMs, restarts: 2 },
      ],
    );
    assert.equal(processPid(runDir, agent), supervisor, 'one supervisor throughout');

    // The agent it started again serves its node: a Ready heartbeat of its own, and the lab converged again.
    const secondRestart = Date.now();
    await waitFor('the restarted agent to be Ready', () => {
      const heartbeat = heartbeatOf(runDir, 'cluster-a', 'a-w1');
      return heartbeat.ready && Date.parse(heartbeat.time) > secondRestart;
    });
    await waitForConvergence(topology, runDir, say);

    // 2. A controller crash: its own supervisor, its own first delay.
    const controller = await crashChild(runDir, 'controller-cluster-a');
    assert.ok(controller.downMs >= firstDelayMs, `the controller came back after the first delay (${controller.downMs} ms)`);
    assert.equal(restartLines(runDir, 'controller-cluster-a').length, 1);
    await waitForConvergence(topology, runDir, say);

    // 3. A deliberate stop: the supervisor and its child end, and nothing comes back after the delay.
    const child = childPid(runDir, agent)!;
    assert.equal(await stopProcess(runDir, agent), true);
    await sleep(2 * firstDelayMs);
    assert.deepEqual([isAlive(supervisor!), isAlive(child)], [false, false]);
    assert.equal(processPid(runDir, agent), undefined);
    assert.equal(childPid(runDir, agent), undefined, 'no child was started again');
    assert.equal(restartLines(runDir, agent).length, 2, 'no restart was logged');
  });
});

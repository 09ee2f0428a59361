/**
 * The lab's supervisor with real processes (no lab: `sleep` and `sh` children in a run directory of their
 * own): a crash is answered by a restart after the backoff's delay, logged; a deliberate stop (SIGTERM, or
 * SIGKILL as when the machine dies) takes the supervisor and its child and restarts nothing; a child
 * that ignores SIGTERM is killed with its own children once the grace runs out.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  childPid,
  isAlive,
  knownProcesses,
  processPid,
  startProcess,
  startSupervised,
  stopProcess,
  writeRestartPolicy,
} from '../../lab/src/processes';
import { crashChild, restartLines, runningChild } from '../support/supervised';
import { waitFor } from '../support/wait';

const policy = { firstDelayMs: 200, maxDelayMs: 500 };

/** The live (not zombie) processes of a process group. */
function groupMembers(pgid: number): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .flatMap((d) => {
      try {
        const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
        const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return state !== 'Z' && Number(pgrp) === pgid ? [Number(d)] : [];
      } catch {
        return [];
      }
    });
}

describe('lab supervisor (real processes)', function () {
  this.timeout(30_000);
  let runDir: string;
  beforeEach(() => {
    runDir = mkdtempSync(join(tmpdir(), 'strait-supervisor-'));
    writeRestartPolicy(runDir, policy);
  });
  afterEach(async () => {
    for (const name of knownProcesses(runDir)) await stopProcess(runDir, name, 0);
    rmSync(runDir, { recursive: true, force: true });
  });

  it('restarts a crashed child after the first delay, doubles it for a crash within 10 s up to the cap, and logs each restart', async () => {
    const supervisor = startSupervised(runDir, 'worker', ['sleep', '1000']);
    assert.deepEqual(knownProcesses(runDir), ['worker'], 'one process, its child pid file not listed');
    assert.equal(processPid(runDir, 'worker'), supervisor);
    const downs: number[] = [];
    for (let i = 0; i < 3; i++) {
      const { crashed, restarted, downMs } = await crashChild(runDir, 'worker');
      assert.notEqual(restarted, crashed);
      assert.equal(isAlive(crashed), false);
      downs.push(downMs);
    }
    assert.deepEqual(
      restartLines(runDir, 'worker').map(({ msg, name, signal, delayMs, restarts }) => ({ msg, name, signal, delayMs, restarts })),
      [200, 400, 500].map((delayMs, i) => ({ msg: 'restarting after crash', name: 'worker', signal: 'SIGKILL', delayMs, restarts: i + 1 })),
    );
    downs.forEach((down, i) => assert.ok(down >= [200, 400, 500][i]!, `restart ${i + 1} came after its delay: ${downs.join(', ')} ms`));
    assert.equal(processPid(runDir, 'worker'), supervisor, 'the same supervisor throughout');
  });

  it('restarts a child that exited by itself, with its exit code, and one that could not start, with the error', async () => {
    startSupervised(runDir, 'quitter', ['sh', '-c', 'sleep 0.1; exit 3']);
    startSupervised(runDir, 'missing', ['/nonexistent/strait-test-binary']);
    await waitFor('two restarts of each', () => restartLines(runDir, 'quitter').length >= 2 && restartLines(runDir, 'missing').length >= 2);
    const [first, second] = restartLines(runDir, 'quitter');
    assert.deepEqual([first!.exitCode, first!.delayMs, second!.delayMs], [3, 200, 400]);
    const [failed] = restartLines(runDir, 'missing');
    assert.equal(failed!.msg, 'restarting after a failed start');
    assert.match(failed!.error!, /ENOENT/);
  });

  it('a deliberate stop (SIGTERM) ends the child and the supervisor and restarts nothing', async () => {
    const supervisor = startSupervised(runDir, 'worker', ['sleep', '1000']);
    const child = await runningChild(runDir, 'worker');
    assert.equal(await stopProcess(runDir, 'worker'), true);
    assert.deepEqual([isAlive(supervisor), isAlive(child)], [false, false]);
    assert.deepEqual(knownProcesses(runDir), []);
    assert.equal(childPid(runDir, 'worker'), undefined, 'the child pid file is gone');
    await sleep(policy.firstDelayMs * 2);
    assert.deepEqual(groupMembers(supervisor), [], 'nothing was started again');
    assert.deepEqual(restartLines(runDir, 'worker'), []);
    assert.equal(await stopProcess(runDir, 'worker'), false, 'a second stop finds nothing');
  });

  it('a stop while the supervisor waits to restart ends it at once', async () => {
    writeRestartPolicy(runDir, { firstDelayMs: 20_000, maxDelayMs: 20_000 });
    const supervisor = startSupervised(runDir, 'worker', ['sleep', '1000']);
    const child = await runningChild(runDir, 'worker');
    process.kill(child, 'SIGKILL');
    await waitFor('the crash to be logged', () => restartLines(runDir, 'worker').length === 1);
    assert.equal(await stopProcess(runDir, 'worker'), true);
    assert.equal(isAlive(supervisor), false);
    assert.deepEqual(groupMembers(supervisor), []);
  });

  it('a SIGKILL stop (graceMs 0, its machine dies) kills the supervisor and the child together: no orphan, no restart', async () => {
    const supervisor = startSupervised(runDir, 'worker', ['sleep', '1000']);
    const child = await runningChild(runDir, 'worker');
    assert.equal(await stopProcess(runDir, 'worker', 0), true);
    assert.deepEqual([isAlive(supervisor), isAlive(child)], [false, false]);
    await sleep(policy.firstDelayMs * 2);
    assert.deepEqual(groupMembers(supervisor), []);
  });

  it('a child that ignores SIGTERM is killed with what it started once the grace runs out', async () => {
    const supervisor = startSupervised(runDir, 'stubborn', ['sh', '-c', "trap '' TERM; sleep 1000 & wait"]);
    await runningChild(runDir, 'stubborn');
    await waitFor('the child and its sleep', () => groupMembers(supervisor).length === 3);
    const started = Date.now();
    assert.equal(await stopProcess(runDir, 'stubborn', 300), true);
    assert.ok(Date.now() - started >= 300, 'the grace was given');
    assert.deepEqual(groupMembers(supervisor), []);
    assert.deepEqual(restartLines(runDir, 'stubborn'), []);
  });

  it('an unsupervised process has no child pid file and stops as before', async () => {
    const pid = startProcess(runDir, 'plain', ['sleep', '1000']);
    assert.equal(childPid(runDir, 'plain'), undefined);
    assert.equal(await stopProcess(runDir, 'plain'), true);
    assert.equal(isAlive(pid), false);
  });
});

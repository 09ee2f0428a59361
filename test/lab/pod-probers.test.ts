/**
 * The lab test's pod probers: one process per pod runs its echoes, in the pod's namespace; a request it
 * cannot run is refused naming the field, a prober that dies fails what it had in flight and the next
 * echo starts another, and closing them leaves no process behind.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createNetns, deleteNetns } from '../../src/kernel/netns';
import { run } from '../../src/kernel/command';
import { podNetns } from '../../lab/src/names';
import { type ProbeRequest, parseProbeRequest } from '../../lab/src/pod-prober';
import { PodProbers } from '../../lab/src/pod-probers';
import { requireRoot } from '../support/kernel';
import { waitFor } from '../support/wait';

const port = 7777;
const closed = 7778;

describe('lab pod prober requests', () => {
  it('are refused naming the field and its value', () => {
    const refusals: [string, string][] = [
      ['{"id": 1', 'not a JSON request: "{\\"id\\": 1"'],
      ['[1]', 'id: undefined is not an integer'],
      ['null', 'not a JSON object: "null"'],
      ['{"id": 1.5}', 'id: 1.5 is not an integer'],
      ['{"id": 1, "mode": "ping"}', 'mode: "ping" is not an echo mode'],
      ['{"id": 1, "mode": "tcp", "to": ""}', 'to: "" is not an address'],
      ['{"id": 1, "mode": "tcp", "to": "10.0.0.1", "port": 0}', 'port: 0 is not a port'],
      ['{"id": 1, "mode": "tcp", "to": "10.0.0.1", "port": 70000}', 'port: 70000 is not a port'],
      ['{"id": 1, "mode": "tcp", "to": "10.0.0.1", "port": 7, "waitMs": 0}', 'waitMs: 0 is not a positive wait'],
      ['{"id": 1, "mode": "frag", "to": "10.0.0.1", "port": 7, "waitMs": 9, "learnsPathMtu": 1}', 'learnsPathMtu: 1 is not a boolean'],
    ];
    for (const [line, error] of refusals) assert.equal((parseProbeRequest(line) as { error: string }).error, error, line);
    assert.deepEqual(parseProbeRequest('{"id": 3, "mode": "frag", "to": "10.0.0.1", "port": 7, "waitMs": 100}'), {
      id: 3,
      mode: 'frag',
      to: '10.0.0.1',
      port: 7,
      waitMs: 100,
    });
    assert.equal(
      (parseProbeRequest('{"id": 3, "mode": "frag", "to": "10.0.0.1", "port": 7, "waitMs": 100, "learnsPathMtu": true}') as ProbeRequest)
        .learnsPathMtu,
      true,
    );
  });
});

describe('lab pod probers (real namespace, real processes)', function () {
  requireRoot(this);
  this.timeout(30_000);
  const pod = `probers-${process.pid}`;
  let server: ChildProcess | undefined;
  let probers: PodProbers | undefined;
  const proberPids = () =>
    run(['ip', 'netns', 'pids', podNetns(pod)])
      .split('\n')
      .filter(Boolean)
      .map(Number)
      .filter((p) => p !== server?.pid);

  before(async () => {
    createNetns(podNetns(pod));
    run(['ip', '-n', podNetns(pod), 'link', 'set', 'lo', 'up']);
    // Where a datagram goes unanswered: a link whose other end has no address and answers no ARP.
    run(['ip', '-n', podNetns(pod), 'link', 'add', 'drop0', 'type', 'veth', 'peer', 'name', 'drop1']);
    run(['ip', '-n', podNetns(pod), 'address', 'add', '198.18.0.1/24', 'dev', 'drop0']);
    for (const link of ['drop0', 'drop1']) run(['ip', '-n', podNetns(pod), 'link', 'set', link, 'up']);
    server = spawn(
      'ip',
      ['netns', 'exec', podNetns(pod), process.execPath, join(__dirname, '..', '..', 'lab', 'src', 'echo-server.js'), String(port)],
      {
        stdio: 'ignore',
      },
    );
    await sleep(300);
  });
  afterEach(() => probers?.close());
  after(() => {
    server?.kill('SIGKILL');
    deleteNetns(podNetns(pod));
  });

  it('runs every echo of a pod in one process in its namespace, concurrently, and closing them leaves none', async () => {
    probers = new PodProbers();
    const results = await Promise.all([
      probers.echo(pod, 'tcp', '127.0.0.1', port, 2000, 10_000),
      probers.echo(pod, 'udp', '127.0.0.1', port, 2000, 10_000),
      probers.echo(pod, 'frag', '127.0.0.1', port, 2000, 10_000),
      probers.echo(pod, 'unreach', '127.0.0.1', closed, 2000, 10_000),
      probers.echo(pod, 'udp', '127.0.0.1', closed, 300, 10_000),
    ]);
    assert.deepEqual(
      results.map(({ ms: _, ...r }) => r),
      [
        { mode: 'tcp', to: '127.0.0.1', ok: true, from: '127.0.0.1' },
        { mode: 'udp', to: '127.0.0.1', ok: true, from: '127.0.0.1' },
        { mode: 'frag', to: '127.0.0.1', ok: true, from: '127.0.0.1' },
        { mode: 'unreach', to: '127.0.0.1', ok: true, from: '127.0.0.1' },
        { mode: 'udp', to: '127.0.0.1', ok: false, error: 'timeout' },
      ],
    );
    // The echoes ran in the pod's namespace (its loopback has the server), from one process.
    assert.equal(proberPids().length, 1, 'one prober in the pod');
    probers.close();
    await waitFor('the prober to exit once closed', () => proberPids().length === 0, 5000);
  });

  it('fails what a dead prober had in flight, naming its exit, and starts another for the next echo', async () => {
    probers = new PodProbers();
    // A udp echo that nothing answers: in flight until its 5 s wait, when the prober is killed.
    const inFlight = probers.echo(pod, 'udp', '198.18.0.2', port, 5000, 10_000);
    await waitFor('the prober to start', () => proberPids().length === 1, 5000);
    const [pid] = proberPids();
    await sleep(200);
    process.kill(pid!, 'SIGKILL');
    await assert.rejects(inFlight, (err: Error) => {
      assert.match(err.message, new RegExp(`^the prober of ${pod} exited \\((SIGKILL|code \\d+)\\)`));
      return true;
    });
    const next = await probers.echo(pod, 'tcp', '127.0.0.1', port, 2000, 10_000);
    assert.equal(next.ok, true, next.error);
  });

  it('fails the echoes of a pod whose namespace does not exist, naming the prober and why', async () => {
    probers = new PodProbers();
    await assert.rejects(probers.echo(`${pod}-none`, 'tcp', '127.0.0.1', port, 1000, 10_000), (err: Error) => {
      assert.match(err.message, new RegExp(`^the prober of ${pod}-none exited \\(code 255\\): Cannot open network namespace`));
      return true;
    });
  });

  it('fails an echo its prober does not answer in time, and takes no later answer for it', async () => {
    probers = new PodProbers();
    // The probe waits 2 s for a drop; the check's bound is 300 ms: the bound fails it first.
    await assert.rejects(probers.echo(pod, 'udp', '198.18.0.2', port, 2000, 300), /the prober of .* gave no answer in 300 ms/);
    await sleep(2000); // its late answer comes and is ignored
    const next = await probers.echo(pod, 'tcp', '127.0.0.1', port, 2000, 10_000);
    assert.equal(next.ok, true, next.error);
  });
});

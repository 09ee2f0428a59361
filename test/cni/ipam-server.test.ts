import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdirSync, readdirSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import fsPromises from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { StateError } from '../../src/errors';
import { createLogger } from '../../src/log';
import { IpamError } from '../../src/poolipam/ipam-error';
import { type IpamServer, serveIpam } from '../../src/poolipam/ipam-server';
import type { AddRequest, AddResponse } from '../../src/poolipam/protocol';
import { captureLog } from '../support/log-capture';
import { RecordingHandler } from './recording-handler';
import { socketDir, staleSocket } from './socket-files';

const log = createLogger('test', 'silent');

/** One HTTP request over the socket, as the plugin sends it: the status and the JSON answer. */
function ask(socket: string, method: string, path: string, body?: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: socket, method, path, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString()) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const addRequest: AddRequest = {
  containerId: 'c1', ifname: 'net1', network: 'underlay', netns: '/var/run/netns/cni-1', podNamespace: 'web', podName: 'web-0',
  options: { defaultIpv4Pools: ['v4-a'], defaultIpv6Pools: [], detectConflict: true, detectGateway: true },
};
/** Runs `action`, calling `look` before each call it makes into node:fs/promises (its steps' seams). */
async function atEachFsCall<T>(look: () => void, action: () => Promise<T>): Promise<T> {
  const module = fsPromises as unknown as Record<string, unknown>;
  const originals = Object.entries(module).filter((entry): entry is [string, (...args: unknown[]) => unknown] => typeof entry[1] === 'function');
  for (const [name, original] of originals) {
    module[name] = (...args: unknown[]) => {
      look();
      return original(...args);
    };
  }
  try {
    return await action();
  } finally {
    for (const [name, original] of originals) module[name] = original;
  }
}

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

describe('pool IPAM service socket', () => {
  let dir: { dir: string; cleanup: () => void };
  let socket: string;
  let handler: RecordingHandler;
  const servers: IpamServer[] = [];
  const serve = async (options: Partial<Parameters<typeof serveIpam>[0]> = {}) => {
    const server = await serveIpam({ socket, handler, log, ...options });
    servers.push(server);
    return server;
  };

  beforeEach(() => {
    dir = socketDir();
    socket = join(dir.dir, 'run', 'strait', 'ipam.sock');
    handler = new RecordingHandler();
  });
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
    dir.cleanup();
  });

  describe('the socket file', () => {
    // A bind at the path, then chmod, leaves the socket there with the umask's mode for a moment: under
    // umask 0 that is 0777, open to every user of the node. Each call into fs is a moment between steps.
    it('is mode 0600 at its path from the first moment, even under umask 0, in a directory created 0700', async () => {
      const seen = new Set<string>();
      const umask = process.umask(0);
      try {
        await atEachFsCall(() => {
          if (existsSync(socket)) seen.add(mode(socket));
        }, () => serve());
      } finally {
        process.umask(umask);
      }
      assert.deepEqual({ modes: [...seen], socket: lstatSync(socket).isSocket(), dir: mode(join(dir.dir, 'run', 'strait')) }, { modes: ['600'], socket: true, dir: '700' });
      assert.deepEqual(readdirSync(join(dir.dir, 'run', 'strait')), ['ipam.sock'], 'nothing else is left in the directory');
    });

    it('keeps the mode of a directory that exists', async () => {
      mkdirSync(join(dir.dir, 'run', 'strait'), { recursive: true, mode: 0o755 });
      await serve();
      assert.deepEqual({ dir: mode(join(dir.dir, 'run', 'strait')), socket: mode(socket) }, { dir: '755', socket: '600' });
    });

    it('replaces the socket file a killed service left', async () => {
      mkdirSync(join(dir.dir, 'run', 'strait'), { recursive: true });
      await staleSocket(socket);
      await serve();
      assert.deepEqual(await ask(socket, 'GET', '/v1/status'), { status: 200, body: { ready: true } });
      assert.equal(mode(socket), '600');
    });

    it('refuses to take over a socket another live service answers on, and leaves that one serving', async () => {
      await serve();
      const { ino } = lstatSync(socket);
      await assert.rejects(serve({ handler: new RecordingHandler() }), (err: unknown) => {
        assert.ok(err instanceof StateError, String(err));
        assert.equal(err.message, `another pool IPAM service answers on ${socket}: refusing to take it over; stop that one first, or serve on another socket path`);
        return true;
      });
      assert.deepEqual({ ino: lstatSync(socket).ino, status: await ask(socket, 'GET', '/v1/status') }, { ino, status: { status: 200, body: { ready: true } } });
      assert.deepEqual(handler.calls, [{ command: 'STATUS' }], 'the first service answered');
    });

    it('refuses a path that holds a file that is not a socket, and leaves the file', async () => {
      mkdirSync(join(dir.dir, 'run', 'strait'), { recursive: true });
      writeFileSync(socket, 'not a socket');
      await assert.rejects(serve(), new StateError(`${socket} exists and is not a socket: refusing to replace it; remove it or serve pool IPAM on another socket path`));
      assert.equal(lstatSync(socket).isFile(), true);
    });

    it('is removed by close, unless a successor already serves on the path', async () => {
      const first = await serve();
      await first.close();
      assert.deepEqual(readdirSync(join(dir.dir, 'run', 'strait')), []);
      const second = await serve();
      unlinkSync(socket);
      await serve();
      await second.close();
      assert.deepEqual(await ask(socket, 'GET', '/v1/status'), { status: 200, body: { ready: true } });
    });
  });

  describe('requests', () => {
    beforeEach(() => serve());

    const malformed: [string, string, string, { code: number; msg: string }][] = [
      ['a body that is not a JSON object', '/v1/add', '[1]', { code: 6, msg: 'request body is not a JSON object' }],
      ['a pool name that is not one', '/v1/add', JSON.stringify({ ...addRequest, options: { ...addRequest.options, defaultIpv4Pools: ['v4-a', 'V4_B'] } }),
        { code: 7, msg: 'options.defaultIpv4Pools[1]: must be a pool name (a DNS-1123 subdomain) (got "V4_B")' }],
      ['a switch that is not a boolean', '/v1/check', JSON.stringify({ ...addRequest, options: { ...addRequest.options, detectGateway: 'no' } }),
        { code: 7, msg: 'options.detectGateway: must be true or false (got "no")' }],
      ['no netns', '/v1/add', JSON.stringify({ ...addRequest, netns: undefined }), { code: 7, msg: 'netns: missing' }],
      ['a prevResult address that is not a string', '/v1/check', JSON.stringify({ ...addRequest, prevResultAddresses: ['10.6.0.2/24', 1] }),
        { code: 7, msg: 'prevResultAddresses[1]: must be a string (got 1)' }],
      ['an interface name with a "/"', '/v1/del', JSON.stringify({ containerId: 'c1', ifname: 'net/1', network: 'underlay' }),
        { code: 7, msg: 'ifname: must be an interface name (1-15 bytes, not "." or "..", no "/", ":" or white space) (got "net/1")' }],
      ['an attachment that is not one', '/v1/gc', JSON.stringify({ network: 'underlay', validAttachments: [{ containerId: 'c1', ifname: 'net1' }, { containerId: '-c2', ifname: 'net1' }] }),
        { code: 7, msg: 'validAttachments[1].containerId: must be a CNI container id (letters, digits, "_", "." and "-", not starting with one of the last three) (got "-c2")' }],
    ];
    for (const [what, path, body, answer] of malformed) {
      it(`answers ${what} with 400 and code ${answer.code}, naming the field, without calling the handler`, async () => {
        assert.deepEqual(await ask(socket, 'POST', path, body), { status: 400, body: answer });
        assert.deepEqual(handler.calls, []);
      });
    }

    it('answers a body that is not JSON with 400 and code 6', async () => {
      const { status, body } = await ask(socket, 'POST', '/v1/add', '{"containerId":');
      assert.deepEqual({ status, code: (body as { code: number }).code, start: (body as { msg: string }).msg.slice(0, 26) }, { status: 400, code: 6, start: 'request body is not JSON: ' });
    });

    it('answers a body over 1 MiB with 413 and code 6', async () => {
      const huge = JSON.stringify({ network: 'underlay', validAttachments: Array.from({ length: 30_000 }, (_, i) => ({ containerId: `container-${i}`, ifname: 'net1' })) });
      assert.deepEqual(await ask(socket, 'POST', '/v1/gc', huge), { status: 413, body: { code: 6, msg: 'request body larger than 1048576 bytes' } });
    });

    it('answers an unknown path or method with code 1: the plugin and the service differ in version', async () => {
      assert.deepEqual(await ask(socket, 'POST', '/v2/add', '{}'), { status: 404, body: { code: 1, msg: 'the pool IPAM service has no POST /v2/add: the plugin and the service are of different versions' } });
      assert.deepEqual(await ask(socket, 'GET', '/v1/add'), { status: 405, body: { code: 1, msg: 'the pool IPAM service has no GET /v1/add: the plugin and the service are of different versions' } });
    });

    // A newer plugin during a rolling upgrade may send more; the handler only ever sees the protocol's fields.
    it('passes the handler the protocol\'s fields only, ignoring any other', async () => {
      await ask(socket, 'POST', '/v1/del', JSON.stringify({ containerId: 'c1', ifname: 'net1', network: 'underlay', podName: 'web-0', reason: 'evicted' }));
      assert.deepEqual(handler.calls, [{ command: 'DEL', request: { containerId: 'c1', ifname: 'net1', network: 'underlay', podName: 'web-0' } }]);
    });

    it('answers what the handler throws as an ErrorResponse: an IpamError with its code, anything else as code 5', async () => {
      handler.fail = new IpamError(103, 'gateway 10.6.0.1 of pool v4-a did not answer 3 ARP probes', 'from net1 in /var/run/netns/cni-1');
      assert.deepEqual(await ask(socket, 'POST', '/v1/add', JSON.stringify(addRequest)), {
        status: 500, body: { code: 103, msg: 'gateway 10.6.0.1 of pool v4-a did not answer 3 ARP probes', details: 'from net1 in /var/run/netns/cni-1' },
      });
      handler.fail = new Error('connect ECONNREFUSED 10.96.0.1:443');
      assert.deepEqual(await ask(socket, 'GET', '/v1/status'), { status: 500, body: { code: 5, msg: 'connect ECONNREFUSED 10.96.0.1:443' } });
      handler.fail = 'a string';
      assert.deepEqual(await ask(socket, 'POST', '/v1/gc', JSON.stringify({ network: 'underlay', validAttachments: [] })), { status: 500, body: { code: 5, msg: 'a string' } });
    });

    it('serves 50 ADDs at once: the handler sees all 50 before it answers any', async () => {
      let inFlight = 0;
      let release!: () => void;
      const allIn = new Promise<void>((resolve) => (release = resolve));
      handler.add = async (req: AddRequest): Promise<AddResponse> => {
        if (++inFlight === 50) release();
        await allIn;
        return { ips: [{ address: `10.6.0.${Number(req.containerId.slice(1)) + 10}/24`, pool: 'v4-a' }], routes: [] };
      };
      const answers = Promise.all(Array.from({ length: 50 }, (_, i) => ask(socket, 'POST', '/v1/add', JSON.stringify({ ...addRequest, containerId: `c${i}` }))));
      const stuck = new Promise((_, reject) => setTimeout(() => reject(new Error(`only ${inFlight} of 50 ADDs reached the handler at once`)), 10_000).unref());
      const addresses = ((await Promise.race([answers, stuck])) as { body: AddResponse }[]).map((a) => a.body.ips[0]!.address);
      assert.deepEqual(addresses, Array.from({ length: 50 }, (_, i) => `10.6.0.${i + 10}/24`));
    });
  });

  it('logs one line per request: command, attachment, outcome and duration, failures as warnings, STATUS as debug', async () => {
    const captured = captureLog();
    await serve({ log: captured.log });
    await ask(socket, 'POST', '/v1/add', JSON.stringify(addRequest));
    await ask(socket, 'GET', '/v1/status');
    handler.fail = new IpamError(102, 'pool v4-a: every address is taken');
    await ask(socket, 'POST', '/v1/del', JSON.stringify({ containerId: 'c1', ifname: 'net1', network: 'underlay' }));
    const lines = captured.lines.filter((l) => l.command).map(({ level, command, containerId, ifname, network, outcome, error, msg, durationMs }) => {
      assert.equal(typeof durationMs, 'number');
      return { level, command, containerId, ifname, network, outcome, error, msg };
    });
    assert.deepEqual(lines, [
      { level: 30, command: 'ADD', containerId: 'c1', ifname: 'net1', network: 'underlay', outcome: 'ok', error: undefined, msg: 'pool IPAM request' },
      { level: 20, command: 'STATUS', containerId: undefined, ifname: undefined, network: undefined, outcome: 'ok', error: undefined, msg: 'pool IPAM request' },
      { level: 40, command: 'DEL', containerId: 'c1', ifname: 'net1', network: 'underlay', outcome: 'error 102', error: 'pool v4-a: every address is taken', msg: 'pool IPAM request failed' },
    ]);
  });
});

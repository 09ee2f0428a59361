import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdirSync, readdirSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import fsPromises from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { StateError } from '../../src/errors';
import { createLogger } from '../../src/log';
import { IpamError } from '../../src/pool-ipam/ipam-error';
import { type IpamServer, serveIpam } from '../../src/pool-ipam/ipam-server';
import type { AddRequest, AddResponse } from '../../src/pool-ipam/protocol';
import { captureLog } from '../support/log-capture';
import { exchange, frame } from './raw-http';
import { RecordingHandler } from './recording-handler';
import { socketDir, staleSocket } from './socket-files';
import { waitFor } from '../support/wait';

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
  containerId: 'c1',
  ifname: 'net1',
  network: 'underlay',
  netns: '/var/run/netns/cni-1',
  podNamespace: 'web',
  podName: 'web-0',
  options: { defaultIpv4Pools: ['v4-a'], defaultIpv6Pools: [], detectConflict: true, detectGateway: true },
};
/** Runs `action`, calling `look` before each call it makes into node:fs/promises (its steps' seams). */
async function atEachFsCall<T>(look: () => void, action: () => Promise<T>): Promise<T> {
  const module = fsPromises as unknown as Record<string, unknown>;
  const originals = Object.entries(module).filter(
    (entry): entry is [string, (...args: unknown[]) => unknown] => typeof entry[1] === 'function',
  );
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
        await atEachFsCall(
          () => {
            if (existsSync(socket)) seen.add(mode(socket));
          },
          () => serve(),
        );
      } finally {
        process.umask(umask);
      }
      assert.deepEqual(
        { modes: [...seen], socket: lstatSync(socket).isSocket(), dir: mode(join(dir.dir, 'run', 'strait')) },
        { modes: ['600'], socket: true, dir: '700' },
      );
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
        assert.equal(
          err.message,
          `another pool IPAM service answers on ${socket}: refusing to take it over; stop that one first, or serve on another socket path`,
        );
        return true;
      });
      assert.deepEqual(
        { ino: lstatSync(socket).ino, status: await ask(socket, 'GET', '/v1/status') },
        { ino, status: { status: 200, body: { ready: true } } },
      );
      assert.deepEqual(handler.calls, [{ command: 'STATUS' }], 'the first service answered');
    });

    it('refuses a path that holds a file that is not a socket, and leaves the file', async () => {
      mkdirSync(join(dir.dir, 'run', 'strait'), { recursive: true });
      writeFileSync(socket, 'not a socket');
      await assert.rejects(
        serve(),
        new StateError(`${socket} exists and is not a socket: refusing to replace it; remove it or serve pool IPAM on another socket path`),
      );
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
      ['a body that is not a JSON object', '/v1/add', '[1]', { code: 6, msg: 'body: must be a JSON object (got [1])' }],
      [
        'a body that is not JSON',
        '/v1/add',
        '{"containerId":',
        { code: 6, msg: 'body: not JSON: cut short: it ends inside a value, after 15 characters (got "{\\"containerId\\":")' },
      ],
      // Checked as the plugin checks them: the service reads the pod by these names, and opens netns.
      [
        'a network name CNI does not allow',
        '/v1/add',
        JSON.stringify({ ...addRequest, network: 'under lay' }),
        {
          code: 7,
          msg: 'network: must be a CNI network name (letters, digits, "_", "." and "-", starting with a letter or digit) (got "under lay")',
        },
      ],
      [
        'a namespace name that is not a DNS-1123 label',
        '/v1/add',
        JSON.stringify({ ...addRequest, podNamespace: '../..' }),
        { code: 7, msg: 'podNamespace: must be a namespace name (a DNS-1123 label) (got "../..")' },
      ],
      [
        'a pod name that is not a DNS-1123 subdomain',
        '/v1/del',
        JSON.stringify({ containerId: 'c1', ifname: 'net1', network: 'underlay', podName: 'Web_0' }),
        { code: 7, msg: 'podName: must be a pod name (a DNS-1123 subdomain) (got "Web_0")' },
      ],
      [
        'a netns with a NUL, which the kernel would read shorter',
        '/v1/add',
        JSON.stringify({ ...addRequest, netns: '/var/run/netns/cni-1\u0000x' }),
        { code: 7, msg: 'netns: must be an absolute path (got "/var/run/netns/cni-1\\u0000x")' },
      ],
      [
        'a pool name that is not one',
        '/v1/add',
        JSON.stringify({ ...addRequest, options: { ...addRequest.options, defaultIpv4Pools: ['v4-a', 'V4_B'] } }),
        { code: 7, msg: 'options.defaultIpv4Pools[1]: must be a pool name (a DNS-1123 subdomain) (got "V4_B")' },
      ],
      [
        'a switch that is not a boolean',
        '/v1/check',
        JSON.stringify({ ...addRequest, options: { ...addRequest.options, detectGateway: 'no' } }),
        { code: 7, msg: 'options.detectGateway: must be true or false (got "no")' },
      ],
      ['no netns', '/v1/add', JSON.stringify({ ...addRequest, netns: undefined }), { code: 7, msg: 'netns: missing' }],
      [
        'a prevResult address that is not a string',
        '/v1/check',
        JSON.stringify({ ...addRequest, prevResultAddresses: ['10.6.0.2/24', 1] }),
        { code: 7, msg: 'prevResultAddresses[1]: must be a string (got 1)' },
      ],
      [
        'an interface name with a "/"',
        '/v1/del',
        JSON.stringify({ containerId: 'c1', ifname: 'net/1', network: 'underlay' }),
        { code: 7, msg: 'ifname: must be an interface name (1-15 bytes, not "." or "..", no "/", ":" or white space) (got "net/1")' },
      ],
      [
        'an attachment that is not one',
        '/v1/gc',
        JSON.stringify({
          network: 'underlay',
          validAttachments: [
            { containerId: 'c1', ifname: 'net1' },
            { containerId: '-c2', ifname: 'net1' },
          ],
        }),
        {
          code: 7,
          msg: 'validAttachments[1].containerId: must be a CNI container id (letters, digits, "_", "." and "-", not starting with one of the last three) (got "-c2")',
        },
      ],
    ];
    for (const [what, path, body, answer] of malformed) {
      it(`answers ${what} with 400 and code ${answer.code}, naming the field, without calling the handler`, async () => {
        assert.deepEqual(await ask(socket, 'POST', path, body), { status: 400, body: answer });
        assert.deepEqual(handler.calls, []);
      });
    }

    it('answers a body over 1 MiB with 413 and code 6', async () => {
      const huge = JSON.stringify({
        network: 'underlay',
        validAttachments: Array.from({ length: 30_000 }, (_, i) => ({ containerId: `container-${i}`, ifname: 'net1' })),
      });
      assert.deepEqual(await ask(socket, 'POST', '/v1/gc', huge), {
        status: 413,
        body: { code: 6, msg: 'body: larger than 1048576 bytes' },
      });
    });

    it('answers an unknown path or method with code 1: the plugin and the service differ in version', async () => {
      assert.deepEqual(await ask(socket, 'POST', '/v2/add', '{}'), {
        status: 404,
        body: { code: 1, msg: 'the pool IPAM service has no POST /v2/add: the plugin and the service are of different versions' },
      });
      assert.deepEqual(await ask(socket, 'GET', '/v1/add'), {
        status: 405,
        body: { code: 1, msg: 'the pool IPAM service has no GET /v1/add: the plugin and the service are of different versions' },
      });
    });

    // A newer plugin during a rolling upgrade may send more; the handler only ever sees the protocol's fields.
    it("passes the handler the protocol's fields only, ignoring any other", async () => {
      await ask(
        socket,
        'POST',
        '/v1/del',
        JSON.stringify({ containerId: 'c1', ifname: 'net1', network: 'underlay', podName: 'web-0', reason: 'evicted' }),
      );
      assert.deepEqual(handler.calls, [
        { command: 'DEL', request: { containerId: 'c1', ifname: 'net1', network: 'underlay', podName: 'web-0' } },
      ]);
    });

    it('answers what the handler throws as an ErrorResponse: an IpamError with its code, anything else as code 5', async () => {
      handler.fail = new IpamError(103, 'gateway 10.6.0.1 of pool v4-a did not answer 3 ARP probes', 'from net1 in /var/run/netns/cni-1');
      assert.deepEqual(await ask(socket, 'POST', '/v1/add', JSON.stringify(addRequest)), {
        status: 500,
        body: { code: 103, msg: 'gateway 10.6.0.1 of pool v4-a did not answer 3 ARP probes', details: 'from net1 in /var/run/netns/cni-1' },
      });
      handler.fail = new Error('connect ECONNREFUSED 10.96.0.1:443');
      assert.deepEqual(await ask(socket, 'GET', '/v1/status'), {
        status: 500,
        body: { code: 5, msg: 'connect ECONNREFUSED 10.96.0.1:443' },
      });
      handler.fail = 'a string';
      assert.deepEqual(await ask(socket, 'POST', '/v1/gc', JSON.stringify({ network: 'underlay', validAttachments: [] })), {
        status: 500,
        body: { code: 5, msg: 'a string' },
      });
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
      const answers = Promise.all(
        Array.from({ length: 50 }, (_, i) => ask(socket, 'POST', '/v1/add', JSON.stringify({ ...addRequest, containerId: `c${i}` }))),
      );
      const stuck = new Promise((_, reject) =>
        setTimeout(() => reject(new Error(`only ${inFlight} of 50 ADDs reached the handler at once`)), 10_000).unref(),
      );
      const addresses = ((await Promise.race([answers, stuck])) as { body: AddResponse }[]).map((a) => a.body.ips[0]!.address);
      assert.deepEqual(
        addresses,
        Array.from({ length: 50 }, (_, i) => `10.6.0.${i + 10}/24`),
      );
    });
  });

  // Node's default answers these with a bare 400 and no log line; a request target new URL() cannot parse threw before any answer.
  describe('connections the HTTP parser gives up on', () => {
    const requestArrivalMs = 300;
    let captured: ReturnType<typeof captureLog>;
    beforeEach(async () => {
      captured = captureLog();
      await serve({ log: captured.log, requestArrivalMs });
    });
    const refusals = () =>
      captured.lines.filter((l) => l.msg === 'pool IPAM request refused' || l.msg === 'pool IPAM request failed').map((l) => l.error);
    const answered = async (bytes: string, after: 'wait' | 'end' = 'wait') => {
      const answer = await exchange(socket, bytes, 'latin1', after, 3000);
      return answer && { status: answer.status, body: JSON.parse(answer.body) as unknown };
    };

    it('answers bytes that are not HTTP, headers over 16 KiB and a request cut short with an ErrorResponse naming the request, and logs each', async () => {
      assert.deepEqual(await answered('\u0000\u0001hello\r\n\r\n'), {
        status: 400,
        body: {
          code: 6,
          msg: 'request: not an HTTP/1.1 request the service can read (HPE_INVALID_METHOD: Parse Error: Invalid method encountered)',
        },
      });
      assert.deepEqual(await answered(frame('GET', '/v1/status', undefined, [`x-pad: ${'a'.repeat(20_000)}`])), {
        status: 431,
        body: { code: 6, msg: 'request: headers larger than the 16 KiB the service reads' },
      });
      assert.deepEqual(await answered('POST /v1/add HTTP/1.1\r\nhost: ipam\r\ncontent-le', 'end'), {
        status: 400,
        body: { code: 6, msg: 'request: the connection ended before the request was whole' },
      });
      assert.deepEqual(await answered(frame('GET', '//[')), {
        status: 404,
        body: { code: 1, msg: 'the pool IPAM service has no GET //[: the plugin and the service are of different versions' },
      });
      assert.deepEqual(refusals(), [
        'request: not an HTTP/1.1 request the service can read (HPE_INVALID_METHOD: Parse Error: Invalid method encountered)',
        'request: headers larger than the 16 KiB the service reads',
        'request: the connection ended before the request was whole',
      ]);
      assert.deepEqual(handler.calls, []);
    });

    it('answers a client that sends nothing, or stops mid-body, with 408 once the arrival time is over, holding no connection', async () => {
      const started = Date.now();
      assert.deepEqual(await answered(''), {
        status: 408,
        body: { code: 6, msg: `request: not received whole within ${requestArrivalMs} ms` },
      });
      assert.ok(Date.now() - started < requestArrivalMs + 1500, `answered after ${Date.now() - started} ms`);
      const body = JSON.stringify(addRequest);
      const cut = frame('POST', '/v1/add', body).slice(0, -10);
      const answer = await answered(cut);
      // The body is being read: no answer may interleave with the request's own; its log line says why it ended.
      assert.equal(answer, undefined);
      await waitFor('the cut body logged', () => refusals().length === 2);
      assert.deepEqual(
        refusals()[1],
        `body: not received whole in time after ${Buffer.byteLength(body) - 10} bytes of the ${Buffer.byteLength(body)} it declared`,
      );
      assert.deepEqual(handler.calls, []);
    });

    it('logs a client that hangs up mid-body, and answers the next request', async () => {
      const body = JSON.stringify(addRequest);
      assert.equal(await exchange(socket, frame('POST', '/v1/add', body).slice(0, -10), 'utf8', 'destroy', 1000), undefined);
      await waitFor('the hang-up logged', () => refusals().length === 1);
      assert.deepEqual(refusals(), [
        `body: the client closed the connection after ${Buffer.byteLength(body) - 10} bytes of the ${Buffer.byteLength(body)} it declared`,
      ]);
      assert.deepEqual(await ask(socket, 'GET', '/v1/status'), { status: 200, body: { ready: true } });
      assert.deepEqual(handler.calls, [{ command: 'STATUS' }]);
    });
  });

  it('logs one line per request: command, attachment, outcome and duration, failures as warnings, STATUS as debug', async () => {
    const captured = captureLog();
    await serve({ log: captured.log });
    await ask(socket, 'POST', '/v1/add', JSON.stringify(addRequest));
    await ask(socket, 'GET', '/v1/status');
    handler.fail = new IpamError(102, 'pool v4-a: every address is taken');
    await ask(socket, 'POST', '/v1/del', JSON.stringify({ containerId: 'c1', ifname: 'net1', network: 'underlay' }));
    const lines = captured.lines
      .filter((l) => l.command)
      .map(({ level, command, containerId, ifname, network, outcome, error, msg, durationMs }) => {
        assert.equal(typeof durationMs, 'number');
        return { level, command, containerId, ifname, network, outcome, error, msg };
      });
    assert.deepEqual(lines, [
      {
        level: 30,
        command: 'ADD',
        containerId: 'c1',
        ifname: 'net1',
        network: 'underlay',
        outcome: 'ok',
        error: undefined,
        msg: 'pool IPAM request',
      },
      {
        level: 20,
        command: 'STATUS',
        containerId: undefined,
        ifname: undefined,
        network: undefined,
        outcome: 'ok',
        error: undefined,
        msg: 'pool IPAM request',
      },
      {
        level: 40,
        command: 'DEL',
        containerId: 'c1',
        ifname: 'net1',
        network: 'underlay',
        outcome: 'error 102',
        error: 'pool v4-a: every address is taken',
        msg: 'pool IPAM request failed',
      },
    ]);
  });
});

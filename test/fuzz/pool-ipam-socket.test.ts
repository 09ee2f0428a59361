/**
 * Fuzz: the pool IPAM service's unix socket (src/pool-ipam/protocol.ts), which anything running as root
 * on the node can write: requests whose bodies are malformed, of wrong types, cut short or not JSON;
 * unknown paths and methods; frames that are not HTTP, headers too large, bodies longer than declared
 * or than the service reads, chunks that lie; a client that connects and sends nothing, or hangs up
 * mid-request. Raw bytes over the real socket of the node's service (test/pool-ipam/fuzz-node.ts).
 *
 * Every input is answered (an ErrorResponse with a CNI or Strait code, never 5, whose message names the
 * field or the part of the request) or, when the client hung up, refused in the service's log in the
 * same words; the service answers the next request; no error or stack in its log; a refusal leaves
 * every IPClaim and Endpoint.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ipamPaths } from '../../src/pool-ipam/protocol';
import { type After, exchange, frame } from '../cni/raw-http';
import { requireRoot } from '../support/kernel';
import { type FuzzSurface, type Verdict, accepted, documentTexts, fuzzSurface, refused } from '../support/fuzz';
import { type Changes, type FuzzNode, assertNamesChange, assertRefusalCode, changesOf, fuzzNode } from '../pool-ipam/fuzz-node';

/** Changes: the fields that differ from a valid request, and the strings they now hold. */
interface SocketInput extends Changes {
  /** What the input is, for the failure's message. */
  what: string;
  bytes: string;
  /** How `bytes` goes on the wire: UTF-8, or one byte per character (binary garbage). */
  encoding?: 'latin1';
  after: After;
}

/** How long the service waits for a request to arrive whole, here (10 s in production). */
const requestArrivalMs = 500;

describe("fuzz: the pool IPAM service's socket", function () {
  requireRoot(this);
  let node: FuzzNode;
  before(async () => {
    node = await fuzzNode({ requestArrivalMs });
  });
  after(async () => node?.close());

  /** A valid body of each POST path: ADD and CHECK of the standing attachment, DEL of one that holds nothing, GC keeping the standing one. */
  const validBodies = (): Record<string, Record<string, unknown>> => ({
    [ipamPaths.add]: { ...node.standing },
    [ipamPaths.check]: { ...node.standing, prevResultAddresses: [node.standingAddress] },
    [ipamPaths.del]: { containerId: 'fuzz-gone', ifname: 'eth0', network: 'underlay', podNamespace: 'default', podName: 'fuzz' },
    [ipamPaths.gc]: { network: 'underlay', validAttachments: [{ containerId: 'fuzz-ctr', ifname: 'eth0' }] },
  });

  const bodies = () =>
    fc.constantFrom(...Object.entries(validBodies())).chain(([path, valid]) =>
      documentTexts(valid).map((body): SocketInput => ({
        what: `POST ${path} with a mutated body`,
        bytes: frame('POST', path, body),
        after: 'wait',
        ...changesOf(valid, body, 'body'),
      })),
    );

  /** The requests the plugin sends (a surface that refuses everything tests nothing). */
  const valid = () =>
    fc.constantFrom(
      ...Object.entries(validBodies()).map(([path, body]): SocketInput => ({
        what: `a valid POST ${path}`,
        bytes: frame('POST', path, JSON.stringify(body)),
        after: 'wait',
        changed: [],
        values: [],
      })),
      { what: 'a valid GET /v1/status', bytes: frame('GET', ipamPaths.status), after: 'wait', changed: [], values: [] },
    );

  const targets = () =>
    fc
      .tuple(
        fc.constantFrom('POST', 'GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'BREW', 'post'),
        fc.constantFrom(
          ...Object.values(ipamPaths),
          '/v1/ADD',
          '/v1/add/',
          '//v1/add',
          '/v1/../v1/add',
          '/v1/add?x=1',
          '/v2/add',
          '/',
          '*',
          '/%2e%2e/v1/add',
          '/__proto__',
          '/constructor',
          '//[',
          'http://ipam/v1/add',
        ),
      )
      .map(([method, path]): SocketInput => {
        const body = method === 'GET' ? undefined : JSON.stringify(validBodies()[path] ?? validBodies()[ipamPaths.add]);
        return {
          what: `${method} ${path}`,
          bytes: frame(method, path, body),
          after: 'wait',
          changed: ['method', 'path'],
          values: [method, path],
        };
      });

  const frames = () => {
    const add = frame('POST', ipamPaths.add, JSON.stringify(validBodies()[ipamPaths.add]));
    const body = JSON.stringify(validBodies()[ipamPaths.add]);
    const cut = fc
      .tuple(fc.integer({ min: 1, max: add.length - 1 }), fc.constantFrom<After>('wait', 'end', 'destroy'))
      .map(([n, after]): SocketInput => ({
        what: `an ADD cut after ${n} of ${add.length} bytes, then ${after}`,
        bytes: add.slice(0, n),
        after,
        changed: ['request'],
        values: [],
      }));
    const longer = fc
      .tuple(fc.integer({ min: 1, max: 100 }), fc.constantFrom<After>('wait', 'end', 'destroy'))
      .map(([k, after]): SocketInput => ({
        what: `content-length ${k} more than the body, then ${after}`,
        bytes: add.replace(/content-length: \d+/, `content-length: ${Buffer.byteLength(body) + k}`),
        after,
        changed: ['body'],
        values: [],
      }));
    const shorter = fc.integer({ min: 1, max: body.length - 1 }).map((k): SocketInput => ({
      what: `content-length ${k} less than the body`,
      bytes: add.replace(/content-length: \d+/, `content-length: ${Buffer.byteLength(body) - k}`),
      after: 'wait',
      changed: ['body'],
      values: [],
    }));
    const chunked = fc.constantFrom('zz', '-1', 'ffffffffffffffff', '5', '0').map((size): SocketInput => ({
      what: `a chunked body with a chunk of size ${size}`,
      bytes: `${frame('POST', ipamPaths.add, undefined, ['transfer-encoding: chunked'])}${size}\r\n${body}\r\n0\r\n\r\n`,
      after: 'wait',
      changed: ['body'],
      values: [],
    }));
    const garbage = fc
      .oneof(
        fc.string({ maxLength: 300 }).map((text) => Buffer.from(text).toString('latin1')),
        fc.uint8Array({ minLength: 1, maxLength: 300 }).map((b) => Buffer.from(b).toString('latin1')),
      )
      .map((bytes): SocketInput => ({
        what: 'bytes that are not HTTP',
        bytes,
        encoding: 'latin1',
        after: 'wait',
        changed: ['request'],
        values: [],
      }));
    const fixed = fc.constantFrom<SocketInput>(
      { what: 'a client that connects and sends nothing', bytes: '', after: 'wait', changed: ['request'], values: [] },
      { what: 'a client that connects and hangs up', bytes: '', after: 'end', changed: ['request'], values: [] },
      {
        what: 'headers of 20 kB',
        bytes: frame('GET', ipamPaths.status, undefined, [`x-pad: ${'a'.repeat(20_000)}`]),
        after: 'wait',
        changed: ['request'],
        values: [],
      },
      { what: 'a body of 2 MiB', bytes: frame('POST', ipamPaths.gc, 'x'.repeat(2 << 20)), after: 'wait', changed: ['body'], values: [] },
      { what: 'HTTP/0.9', bytes: 'GET /v1/status\r\n\r\n', after: 'wait', changed: ['request'], values: [] },
      {
        what: 'HTTP/1.0 without a host',
        bytes: `POST /v1/add HTTP/1.0\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        after: 'wait',
        changed: ['request'],
        values: [],
      },
    );
    return fc.oneof(cut, longer, shorter, chunked, garbage, fixed);
  };

  /** The cases of the suite's first runs and of the protocol's own tests, as the plugin would never send them. */
  const cases = (): SocketInput[] => {
    const add = validBodies()[ipamPaths.add]!;
    const body = (doc: Record<string, unknown>, what: string, changed: string[], values: string[] = []): SocketInput => ({
      what,
      bytes: frame('POST', ipamPaths.add, JSON.stringify(doc)),
      after: 'wait',
      changed,
      values,
    });
    return [
      body({ ...add, netns: '/run/netns/gone\u0000' }, 'a netns with a NUL', ['netns'], ['/run/netns/gone\u0000']),
      body(
        { ...add, containerId: 'fuzz-new', netns: '/etc/hostname' },
        'a netns that is a file',
        ['containerId', 'netns'],
        ['/etc/hostname'],
      ),
      body({ ...add, containerId: 'fuzz-new', ifname: 'eth9' }, 'an interface the namespace lacks', ['containerId', 'ifname'], ['eth9']),
      body({ ...add, podName: 'Fuzz_Pod' }, 'a pod name the API server cannot hold', ['podName'], ['Fuzz_Pod']),
      body({ ...add, podNamespace: '../..' }, 'a namespace name with a path in it', ['podNamespace'], ['../..']),
      body({ ...add, network: 'under lay' }, 'a network name CNI does not allow', ['network'], ['under lay']),
      {
        what: 'a body that is JSON for a __proto__ key',
        bytes: frame('POST', ipamPaths.add, JSON.stringify(add).replace('{', '{"__proto__":{"containerId":"x"},')),
        after: 'wait',
        changed: ['__proto__'],
        values: [],
      },
    ];
  };

  const surface = (): FuzzSurface<SocketInput> => ({
    name: 'pool IPAM socket',
    inputs: fc.oneof(
      { weight: 5, arbitrary: bodies() },
      { weight: 1, arbitrary: targets() },
      { weight: 3, arbitrary: frames() },
      { weight: 1, arbitrary: valid() },
    ),
    cases: cases(),
    timeoutMs: 10_000,
    state: () => node.state(),
    async feed(input): Promise<Verdict> {
      const mark = node.logMark();
      const answer = await exchange(
        node.f.socket,
        input.bytes,
        input.encoding ?? 'utf8',
        input.after,
        input.after === 'wait' ? requestArrivalMs + 4000 : 2000,
      );
      let verdict: Verdict;
      if (answer) {
        if (answer.status === 200) verdict = accepted;
        else {
          const error = JSON.parse(answer.body) as { code?: unknown; msg?: unknown };
          assert.equal(typeof error.msg, 'string', `${input.what}: HTTP ${answer.status} without an ErrorResponse: ${answer.body}`);
          assertRefusalCode(error.code, error.msg as string);
          verdict = refused(error.msg as string);
        }
      } else {
        // Nobody to answer: what the service did is in its log (a request line, or a refusal).
        const logged = async () => node.checkLog(mark).find((l) => typeof l.outcome === 'string');
        let line = await logged();
        for (let i = 0; !line && i < 40; i++) {
          await new Promise((r) => setTimeout(r, 50));
          line = await logged();
        }
        if (line) verdict = line.outcome === 'ok' ? accepted : refused(String(line.error));
        else {
          assert.equal(input.bytes, '', `${input.what}: no answer, and the service logged nothing about it`);
          verdict = { accepted: true, detail: 'a connection without a request: nothing to answer' };
        }
      }
      node.checkLog(mark);
      // Whatever came before, the service answers the next request.
      const status = await exchange(node.f.socket, frame('GET', ipamPaths.status), 'utf8', 'wait', 5000);
      assert.equal(status?.status, 200, `after ${input.what}, the service does not answer STATUS: ${JSON.stringify(status)}`);
      await node.restore();
      return verdict;
    },
    clear: assertNamesChange,
  });

  fuzzSurface(surface);
});

/**
 * The metrics and health server of the agent and the controller (src/metrics/server.ts) fed requests as
 * bytes over TCP: every method (standard, lowercase, made up, CONNECT), targets (the served paths and
 * their near misses, queries, absolute URLs, `*`, escapes, huge), versions, headers (Host, framing that
 * lies or contradicts itself, Expect, Upgrade, huge or malformed ones) and bodies, several requests in
 * one write.
 *
 * Every answer is one the server documents: 200 for GET or HEAD of /metrics, /healthz and /readyz (the
 * process here is ready), 404 naming what is served for anything else, and node:http's own 400 (431 for
 * headers past its limit) for what it cannot read, 417 for an Expect it does not know; never a 500, never a connection closed unanswered,
 * never an error or a stack in the log, never a hang; the server answers /healthz after every input,
 * and the registry's samples are what they were.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Gauge, Registry } from 'prom-client';
import { type MetricsServer, startMetricsServer } from '../../src/metrics/server';
import { type FuzzSurface, accepted, fuzzSurface, refused, trickyStrings } from '../support/fuzz';
import { type CapturedLog, captureLog } from '../support/log-capture';
import { firstResponse, rawExchange, statusCodes } from '../support/raw-http';

interface RawRequest {
  method: string;
  target: string;
  version: string;
  headers: [string, string][];
  body: string;
}

const served = ['/metrics', '/healthz', '/readyz'];
const notFound = 'not found: GET /metrics, /healthz or /readyz\n';

const requestText = (r: RawRequest) =>
  `${r.method} ${r.target} ${r.version}\r\n${r.headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n${r.body}`;

const methods = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('GET', 'GET', 'HEAD') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'POST',
      'PUT',
      'DELETE',
      'PATCH',
      'OPTIONS',
      'TRACE',
      'CONNECT',
      'PROPFIND',
      'get',
      'Get',
      'FOO',
      'G ET',
      '',
      'GET\u0000',
    ),
  },
);
const targets = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...served) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '/',
      '/metrics/',
      '//metrics',
      '/METRICS',
      '/metrics?name[]=x',
      '/healthz?%zz',
      '/readyz#x',
      '/metrics/../healthz',
      '/%6detrics',
      '*',
      'http://[/metrics',
      'http://x/metrics',
      '127.0.0.1:9972',
      '/metrics%00',
      '/\u00e9',
      `/${'m'.repeat(70_000)}`,
      '/metrics?',
      '?',
      '',
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom(...trickyStrings).map((s) => `/${s.slice(0, 200)}`) },
);
const versions = fc.oneof(
  { weight: 6, arbitrary: fc.constant('HTTP/1.1') },
  { weight: 1, arbitrary: fc.constantFrom('HTTP/1.0', 'HTTP/2.0', 'HTTP/0.9', 'HTTP/1.1x', 'http/1.1', '') },
);
const headers = fc.array(
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc.constantFrom<[string, string]>(
        ['Host', 'localhost'],
        ['Accept', 'text/plain'],
        ['Accept', 'application/openmetrics-text; version=1.0.0'],
        ['Accept-Encoding', 'gzip'],
        ['User-Agent', 'Prometheus/2.53'],
      ),
    },
    {
      weight: 2,
      arbitrary: fc.constantFrom<[string, string]>(
        ['Content-Length', '5'],
        ['Content-Length', '-1'],
        ['Content-Length', '99999999999999999999'],
        ['Content-Length', 'x'],
        ['Transfer-Encoding', 'chunked'],
        ['Transfer-Encoding', 'gzip, chunked'],
        ['Transfer-Encoding', 'nope'],
        ['Expect', '100-continue'],
        ['Expect', 'nope'],
        ['Upgrade', 'websocket'],
        ['Connection', 'Upgrade'],
        ['Connection', 'close'],
        ['Connection', 'keep-alive'],
        ['Host', ''],
        ['X-Big', 'x'.repeat(20_000)],
        ['Bad Name', 'x'],
        ['X', 'a\u0000b'],
        ['', 'x'],
        ['X-Unicode', 'é'],
      ),
    },
  ),
  { maxLength: 3 },
);
const bodies = fc.oneof(
  { weight: 6, arbitrary: fc.constant('') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'x',
      '{"a":1}',
      '0\r\n\r\n',
      '5\r\nhello\r\n0\r\n\r\n',
      'zz\r\n',
      'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n',
      'x'.repeat(100_000),
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 100 }) },
);
// A Host most of the time: node:http refuses an HTTP/1.1 request without one (requireHostHeader).
const requests: fc.Arbitrary<RawRequest> = fc
  .record({
    method: methods,
    target: targets,
    version: versions,
    host: fc.oneof({ weight: 9, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
    headers,
    body: bodies,
  })
  .map(({ host, ...r }) => ({ ...r, headers: host ? [['Host', 'localhost'] as [string, string], ...r.headers] : r.headers }));

/** Found by hand or by this suite: a target WHATWG's URL cannot parse (a 500, logged as an error); a CONNECT (closed unanswered). */
const cases: RawRequest[] = [
  { method: 'GET', target: 'http://[/metrics', version: 'HTTP/1.1', headers: [['Host', 'x']], body: '' },
  { method: 'CONNECT', target: '127.0.0.1:9972', version: 'HTTP/1.1', headers: [['Host', 'x']], body: '' },
  // A CONNECT's socket, left unread after its answer, held close() for ever.
  { method: 'CONNECT', target: '/metrics', version: 'HTTP/1.1', headers: [['Host', 'x']], body: 'x'.repeat(100_000) },
  {
    method: 'GET',
    target: '/metrics',
    version: 'HTTP/1.1',
    headers: [
      ['Host', 'x'],
      ['Content-Length', '5'],
      ['Content-Length', '6'],
    ],
    body: 'abcdef',
  },
];

describe('fuzz: the metrics and health server', function () {
  let server: MetricsServer;
  let log: CapturedLog;
  const registry = new Registry();
  new Gauge({ name: 'strait_fuzz_value', help: 'a value', labelNames: ['kind'], registers: [registry] }).set({ kind: 'a' }, 7);

  before(async () => {
    log = captureLog('debug');
    server = await startMetricsServer(
      { address: '127.0.0.1', port: 0, addressFrom: '--metrics-address' },
      registry,
      () => undefined,
      log.log,
    );
  });
  after(async () => server?.close());

  fuzzSurface((): FuzzSurface<RawRequest> => ({
    name: 'metrics server',
    inputs: requests,
    cases,
    async state() {
      return registry.metrics();
    },
    async feed(input) {
      const logged = log.lines.length;
      const data = await rawExchange(server.port, Buffer.from(requestText(input), 'latin1'));
      const what = `${JSON.stringify(requestText(input).slice(0, 200))}`;
      for (const line of log.lines.slice(logged)) {
        assert.ok(Number(line.level) < 50, `an error logged for ${what}: ${JSON.stringify(line).slice(0, 500)}`);
        assert.doesNotMatch(JSON.stringify(line), /\n\s+at .+[(:]\d+/, `a stack logged for ${what}`);
      }
      const codes = statusCodes(data);
      assert.ok(codes.length > 0, `the connection closed unanswered for ${what}`);
      for (const code of codes)
        assert.ok(
          [100, 200, 400, 404, 417, 431].includes(code),
          `an answer ${code} the server does not document, for ${what}: ${data.slice(0, 300)}`,
        );
      // Still serving.
      assert.equal(
        firstResponse(await rawExchange(server.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'))?.status,
        200,
        `no /healthz after ${what}`,
      );

      const answer = firstResponse(data, input.method === 'HEAD');
      assert.ok(answer, `no final answer for ${what}: ${data.slice(0, 300)}`);
      if (answer.status === 200) return accepted;
      if (answer.status === 404) {
        assert.equal(answer.body, input.method === 'HEAD' ? '' : notFound, what);
        return refused(notFound.trim());
      }
      // node:http's own: no body; the connection closed when it could not read the request.
      assert.equal(answer.body, '', what);
      if (answer.status !== 417) assert.equal(answer.headers.connection, 'close', what);
      return refused(`${answer.status}: node:http could not ${answer.status === 417 ? 'meet the Expect of' : 'read'} the request`);
    },
    clear(message) {
      assert.match(
        message,
        /^(not found: GET \/metrics, \/healthz or \/readyz|(400|431): node:http could not read the request|417: node:http could not meet the Expect of the request)$/,
      );
    },
  }));
});

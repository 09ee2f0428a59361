import assert from 'node:assert/strict';
import { Gauge, Registry } from 'prom-client';
import { InputError } from '../../src/errors';
import { createLogger } from '../../src/log';
import { type MetricsServer, startMetricsServer } from '../../src/metrics/server';
import { captureLog } from '../support/log-capture';
import { get, parseSamples } from '../support/metrics';
import { firstResponse, rawExchange } from '../support/raw-http';

const log = createLogger('test', 'silent');
const onLoopback = (port: number) => ({ address: '127.0.0.1', port, addressFrom: '--metrics-address' as const });

describe('metrics and health server', () => {
  let registry: Registry;
  let notReady: string | undefined;
  let failScrape: boolean;
  let server: MetricsServer;

  beforeEach(async () => {
    registry = new Registry();
    notReady = 'no spec applied yet';
    failScrape = false;
    new Gauge({
      name: 'strait_test_value',
      help: 'a value',
      labelNames: ['kind'],
      registers: [registry],
      collect() {
        if (failScrape) throw new Error('cannot read strait_peer_counters');
        this.set({ kind: 'a' }, 42);
      },
    });
    server = await startMetricsServer(onLoopback(0), registry, () => notReady, log);
  });
  afterEach(() => server.close());

  it('serves the registry on GET /metrics in the Prometheus text format', async () => {
    const res = await fetch(`http://127.0.0.1:${server.port}/metrics`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
    assert.deepEqual(parseSamples(await res.text()), [{ name: 'strait_test_value', labels: { kind: 'a' }, value: 42 }]);
  });

  it('answers /healthz 200, and /readyz 503 with the reason on one line until the process is ready', async () => {
    assert.deepEqual(await get(server.port, '/healthz'), { status: 200, body: 'ok\n' });
    assert.deepEqual(await get(server.port, '/readyz'), { status: 503, body: 'not ready: no spec applied yet\n' });
    notReady = 'applying the spec failed: RTNETLINK answers:\n  File exists';
    assert.deepEqual(await get(server.port, '/readyz'), {
      status: 503,
      body: 'not ready: applying the spec failed: RTNETLINK answers: File exists\n',
    });
    notReady = undefined;
    assert.deepEqual(await get(server.port, '/readyz'), { status: 200, body: 'ready\n' });
  });

  it('answers 404 to any other path or method', async () => {
    for (const path of ['/', '/metric', '/metrics/x', '/healthz/']) assert.equal((await get(server.port, path)).status, 404, path);
    const posted = await fetch(`http://127.0.0.1:${server.port}/metrics`, { method: 'POST' });
    assert.equal(posted.status, 404);
    assert.equal((await get(server.port, '/metrics?name[]=x')).status, 200, 'a query string does not change the path');
  });

  it('answers a target that is no path 404 and a CONNECT 404, never a 500, logging nothing; node:http answers what it cannot read 400', async () => {
    const captured = captureLog('debug');
    const logged = await startMetricsServer(onLoopback(0), registry, () => notReady, captured.log);
    try {
      const first = async (request: string, head = false) => {
        const answer = firstResponse(await rawExchange(logged.port, request), head);
        return answer && { status: answer.status, body: answer.body };
      };
      const notFound = { status: 404, body: 'not found: GET /metrics, /healthz or /readyz\n' };
      // An absolute URL that WHATWG's URL cannot parse (it threw: a 500 with the TypeError's message, logged as an error).
      assert.deepEqual(await first('GET http://[/metrics HTTP/1.1\r\nHost: x\r\n\r\n'), notFound);
      assert.deepEqual(await first('GET * HTTP/1.1\r\nHost: x\r\n\r\n'), notFound);
      // node:http closed a CONNECT unanswered; answered, its socket must not outlive the answer (close() waits for it).
      assert.deepEqual(await first('CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: x\r\n\r\n'), notFound);
      assert.deepEqual(await first(`CONNECT /metrics HTTP/1.1\r\nHost: x\r\n\r\n${'x'.repeat(100_000)}`), notFound);
      assert.deepEqual(await first('GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef'), {
        status: 400,
        body: '',
      });
      assert.deepEqual(await first('GET /healthz?x=%zz HTTP/1.1\r\nHost: x\r\n\r\n'), { status: 200, body: 'ok\n' });
      assert.deepEqual(
        captured.lines.filter((l) => Number(l.level) >= 50),
        [],
      );
    } finally {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        logged.close(),
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('close() still waits for a connection after 2 s')), 2000))),
      ]);
      clearTimeout(timer);
    }
  });

  it('answers 500 when a collector fails, and goes on serving', async () => {
    failScrape = true;
    assert.deepEqual(await get(server.port, '/metrics'), { status: 500, body: 'cannot read strait_peer_counters\n' });
    failScrape = false;
    assert.equal((await get(server.port, '/metrics')).status, 200);
  });

  it('refuses a port in use, naming --metrics-port, the address and port, and EADDRINUSE', async () => {
    await assert.rejects(
      startMetricsServer(onLoopback(server.port), registry, () => undefined, log),
      (err: unknown) => {
        assert.ok(err instanceof InputError, String(err));
        assert.equal(err.field, '--metrics-port');
        assert.equal(err.value, String(server.port));
        assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${server.port} is already in use \\(EADDRINUSE\\)`));
        return true;
      },
    );
  });

  it('refuses an address this host does not have, naming where it came from', async () => {
    await assert.rejects(
      startMetricsServer({ address: '192.0.2.250', port: 0, addressFrom: 'HOST_IP' }, registry, () => undefined, log),
      (err: unknown) => {
        assert.ok(err instanceof InputError, String(err));
        assert.deepEqual({ field: err.field, value: err.value }, { field: 'HOST_IP', value: '192.0.2.250' });
        assert.match(err.message, /EADDRNOTAVAIL/);
        return true;
      },
    );
  });

  it('closes when asked, twice without harm, and frees its port', async () => {
    await Promise.all([server.close(), server.close()]);
    await assert.rejects(get(server.port, '/healthz'), 'nothing listens after close');
    const again = await startMetricsServer(onLoopback(server.port), registry, () => undefined, log);
    await again.close();
  });
});

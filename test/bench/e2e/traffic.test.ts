import assert from 'node:assert/strict';
import { benchReflections } from './mappings';
import { bpfCost } from './bpf-stats';
import { parseCrr, parseIperf3, parseRoundTrips, parseSockperf } from './traffic';

describe("the e2e bench's tool outputs and inputs (pure)", () => {
  it("reads tcp-crr's connections per second and refuses a run where a connection failed", () => {
    assert.deepEqual(parseCrr('{"connections": 8000, "errors": 0, "seconds": 4.000}\n'), { connections: 8000, perSecond: 2000 });
    assert.throws(() => parseCrr('{"connections": 7999, "errors": 1, "seconds": 4.000}'), /7999 connections, 1 failed/);
    assert.throws(() => parseCrr('{"connections": 0, "errors": 0, "seconds": 4.000}'), /0 connections/);
  });

  it("reads sockperf's 50th and 99th percentiles, not its neighbours", () => {
    const output = [
      'sockperf: ---> percentile 99.900 =  137.136',
      'sockperf: ---> percentile 99.000 =   71.920',
      'sockperf: ---> percentile 90.000 =    5.705',
      'sockperf: ---> percentile 50.000 =    4.977',
    ].join('\n');
    assert.deepEqual(parseSockperf(output), { p50Us: 4.977, p99Us: 71.92 });
    assert.throws(() => parseSockperf('sockperf: ---> percentile 99.000 = 1'), /no 50\.000 percentile/);
  });

  it("reads tcp-crr rr's percentiles and refuses a run without a round trip", () => {
    assert.deepEqual(parseRoundTrips('{"roundTrips": 185830, "p50Us": 4.746, "p99Us": 11.234}\n'), { p50Us: 4.746, p99Us: 11.234 });
    assert.throws(() => parseRoundTrips('{"roundTrips": 0, "p50Us": 0, "p99Us": 0}'), /no round trip/);
  });

  it("reads iperf3's received rate in Gbit/s and reports its error", () => {
    assert.equal(parseIperf3('{"end": {"sum_received": {"bits_per_second": 12500000000}}}'), 12.5);
    assert.throws(() => parseIperf3('{"error": "unable to connect to server"}'), /iperf3: unable to connect to server/);
  });

  it('reflects the real pod in each family, then fills up to n with addresses of the upper half of the PodCIDR', () => {
    const real = { to: 'cluster-a', fromPeer: 'cluster-c', podIP: '172.20.1.10' };
    const real6 = { ...real, podIP: 'fd00:c:0:1::10' };
    assert.deepEqual(benchReflections(4, [real, real6], '172.20.0.0/14'), [
      { to: 'cluster-a', fromPeer: 'cluster-c', podIP: '172.22.0.1' },
      { to: 'cluster-a', fromPeer: 'cluster-c', podIP: '172.22.0.2' },
      real,
      real6,
    ]);
    assert.deepEqual(benchReflections(2, [real, real6], '172.20.0.0/14'), [real, real6]);
    assert.throws(() => benchReflections(1, [real, real6], '172.20.0.0/14'), /1 reflections cannot hold the 2 of the real pod/);
    assert.throws(() => benchReflections(128, [real], '172.20.0.0/24'), /no room for 128/);
  });

  it('gives each program its runs and ns per run between two readings, leaving out programs that did not run', () => {
    const before = new Map([
      ['strait_from_pod', { ns: 1_000, runs: 10 }],
      ['strait_from_overlay', { ns: 500, runs: 5 }],
    ]);
    const after = new Map([
      ['strait_from_pod', { ns: 31_000, runs: 110 }],
      ['strait_from_overlay', { ns: 500, runs: 5 }],
    ]);
    assert.deepEqual(bpfCost(before, after), { strait_from_pod: { runs: 100, nsPerRun: 300 } });
  });
});

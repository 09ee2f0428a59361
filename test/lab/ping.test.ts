import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { run } from '../../src/kernel/command';
import { echoOutcome, pingArgv } from '../../lab/src/ping';
import { requireRoot, vethPair } from '../support/kernel';

// iputils 20221126's words, printed by pingArgv's command in namespaces of the real-kernel tests below.
const lateThird = `PING 10.219.0.2 (10.219.0.2) 56(84) bytes of data.
64 bytes from 10.219.0.2: icmp_seq=1 ttl=64 time=0.041 ms
64 bytes from 10.219.0.2: icmp_seq=2 ttl=64 time=0.074 ms
64 bytes from 10.219.0.2: icmp_seq=3 ttl=64 time=572 ms

--- 10.219.0.2 ping statistics ---
5 packets transmitted, 3 received, 40% packet loss, time 816ms
rtt min/avg/max/mdev = 0.041/190.767/572.186/269.703 ms, pipe 3
`;
const secondDropped = `PING 10.219.0.2 (10.219.0.2) 56(84) bytes of data.
[1795488060.355266] 64 bytes from 10.219.0.2: icmp_seq=1 ttl=64 time=0.039 ms
[1795488060.760852] 64 bytes from 10.219.0.2: icmp_seq=3 ttl=64 time=0.077 ms
[1795488060.964787] 64 bytes from 10.219.0.2: icmp_seq=4 ttl=64 time=0.075 ms

--- 10.219.0.2 ping statistics ---
4 packets transmitted, 3 received, 25% packet loss, time 609ms
rtt min/avg/max/mdev = 0.039/0.063/0.077/0.017 ms
`;
// Over IPv6 (the address holds colons): the reply lines as ping printed them in the dual-stack lab, the loss written by hand.
const overIpv6 = `PING fd00:a:0:1::a(fd00:a:0:1::a) 56 data bytes
64 bytes from fd00:a:0:1::a: icmp_seq=1 ttl=62 time=0.066 ms
64 bytes from fd00:a:0:1::a: icmp_seq=3 ttl=62 time=0.071 ms

--- fd00:a:0:1::a ping statistics ---
3 packets transmitted, 2 received, 33.3333% packet loss, time 2046ms
`;
const noAnswer = `PING 10.219.0.9 (10.219.0.9) 56(84) bytes of data.

--- 10.219.0.9 ping statistics ---
10 packets transmitted, 0 received, 100% packet loss, time 1835ms
`;
// A duplicate reply, and an ICMP error that stops a ping with a deadline, as ping prints them (written by hand).
const duplicated = `PING 10.219.0.2 (10.219.0.2) 56(84) bytes of data.
64 bytes from 10.219.0.2: icmp_seq=1 ttl=64 time=0.041 ms
64 bytes from 10.219.0.2: icmp_seq=1 ttl=64 time=0.052 ms (DUP!)
64 bytes from 10.219.0.2: icmp_seq=3 ttl=64 time=0.061 ms

--- 10.219.0.2 ping statistics ---
3 packets transmitted, 2 received, +1 duplicates, 33.3333% packet loss, time 400ms
`;
const stoppedByError = `PING 10.219.0.9 (10.219.0.9) 56(84) bytes of data.
From 10.219.0.1 icmp_seq=1 Destination Net Unreachable

--- 10.219.0.9 ping statistics ---
1 packets transmitted, 0 received, +1 errors, 100% packet loss, time 0ms
`;

describe('lab ping probe: which requests were answered', () => {
  it('gives every request its wait through a deadline, not a reply timeout', () => {
    assert.deepEqual(pingArgv('10.0.1.10', { count: 3, intervalS: 0.2, waitS: 3 }), [
      'ping',
      '-n',
      '-c',
      '3',
      '-i',
      '0.2',
      '-w',
      '4',
      '10.0.1.10',
    ]);
    assert.deepEqual(pingArgv('10.0.1.10', { count: 600, intervalS: 0.01, waitS: 11 }), [
      'ping',
      '-n',
      '-c',
      '600',
      '-i',
      '0.01',
      '-w',
      '17',
      '10.0.1.10',
    ]);
  });

  it('counts a late reply as an answer, though ping went on sending and says 40% loss', () => {
    assert.deepEqual(echoOutcome(0, lateThird, '', 3), { transmitted: 3, received: 3, unanswered: [], replyTimesMs: [] });
  });

  it("names a request never answered, though a later request made up ping's count", () => {
    assert.deepEqual(echoOutcome(0, secondDropped, '', 3), {
      transmitted: 3,
      received: 2,
      unanswered: [2],
      replyTimesMs: [1795488060355.266, 1795488060760.852, 1795488060964.787],
    });
  });

  it('reads the replies of an IPv6 ping, whose address holds colons', () => {
    assert.deepEqual(echoOutcome(1, overIpv6, '', 3), { transmitted: 3, received: 2, unanswered: [2], replyTimesMs: [] });
  });

  it('judges only the requests sent, ignores duplicates, and says nothing came back when nothing did', () => {
    assert.deepEqual(echoOutcome(1, duplicated, '', 3), { transmitted: 3, received: 2, unanswered: [2], replyTimesMs: [] });
    assert.deepEqual(echoOutcome(1, stoppedByError, '', 3), { transmitted: 1, received: 0, unanswered: [1], replyTimesMs: [] });
    assert.deepEqual(echoOutcome(1, noAnswer, '', 3), { transmitted: 3, received: 0, unanswered: [1, 2, 3], replyTimesMs: [] });
  });

  it('is a failure of the probe when ping gave no answer at all', () => {
    assert.throws(
      () => echoOutcome(2, '', 'ping: connect: Network is unreachable\n', 3),
      /ping did not give an answer \(exit 2\): ping: connect: Network is unreachable/,
    );
  });
});

describe('lab ping probe on real packets (a veth pair, tc and nftables in its namespaces)', function () {
  requireRoot(this);
  let net: ReturnType<typeof vethPair>;
  beforeEach(() => {
    net = vethPair();
  });
  afterEach(() => net.cleanup());

  const probe = () => {
    const r = spawnSync('ip', ['netns', 'exec', net.left, ...pingArgv('10.213.0.2', { count: 3, intervalS: 0.2, waitS: 1 })], {
      encoding: 'utf8',
      timeout: 10_000,
    });
    return echoOutcome(r.status ?? -1, r.stdout, r.stderr, 3);
  };

  it('counts a third reply that comes about 0.6 s late as an answer (ping -c -W gave up 0.2 s after its last request)', () => {
    // An HTB class of 1,000 bit/s takes the requests from the second on: the second leaves at once and
    // puts the class 784 bits in debt, so the third (sent at 0.4 s) waits until about 1 s. Nothing is lost.
    const tc = (...args: string[]) => run(['tc', '-n', net.left, ...args]);
    tc('qdisc', 'add', 'dev', 'veth0', 'root', 'handle', '1:', 'htb', 'default', '1');
    tc('class', 'add', 'dev', 'veth0', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '1gbit');
    tc(
      'class',
      'add',
      'dev',
      'veth0',
      'parent',
      '1:',
      'classid',
      '1:2',
      'htb',
      'rate',
      '1000bit',
      'ceil',
      '1000bit',
      'burst',
      '1b',
      'cburst',
      '1b',
    );
    // ICMP echo requests (type 8 at byte 20 of the IP header) by sequence number (bytes 26-27): 2, 3, 4-7, 8-15.
    for (const [seq, mask] of [
      ['2', '0xffff'],
      ['3', '0xffff'],
      ['4', '0xfffc'],
      ['8', '0xfff8'],
    ] as const) {
      tc(
        'filter',
        'add',
        'dev',
        'veth0',
        'parent',
        '1:',
        'protocol',
        'ip',
        'prio',
        '1',
        'u32',
        'match',
        'ip',
        'protocol',
        '1',
        '0xff',
        'match',
        'u8',
        '8',
        '0xff',
        'at',
        '20',
        'match',
        'u16',
        seq,
        mask,
        'at',
        '26',
        'flowid',
        '1:2',
      );
    }
    assert.deepEqual(probe(), { transmitted: 3, received: 3, unanswered: [], replyTimesMs: [] });
    const delayed = run(['tc', '-s', '-n', net.left, 'class', 'show', 'dev', 'veth0', 'classid', '1:2']);
    assert.match(delayed, /Sent \d+ bytes [2-9] pkt/, 'the second request and later ones crossed the slow class');
  });

  it('names the request that nftables dropped, though ping sent a fourth to make up its count', () => {
    const nft = (...args: string[]) => run(['ip', 'netns', 'exec', net.left, 'nft', ...args]);
    nft('add', 'table', 'ip', 'probe');
    nft('add', 'chain', 'ip', 'probe', 'out', '{ type filter hook output priority 0; }');
    nft('add', 'rule', 'ip', 'probe', 'out', 'icmp', 'type', 'echo-request', 'icmp', 'sequence', '2', 'counter', 'drop');
    const outcome = probe();
    assert.deepEqual([outcome.transmitted, outcome.received, outcome.unanswered], [3, 2, [2]]);
    assert.match(nft('list', 'chain', 'ip', 'probe', 'out'), /counter packets 1 bytes 84 drop/, 'exactly one request was dropped');
  });
});

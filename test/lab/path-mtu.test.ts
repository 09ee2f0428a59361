import assert from 'node:assert/strict';
import { pathMtuVerdict } from '../../lab/src/ping';
import { fragmentLine, fragmentResult } from '../../lab/src/wire';

// iputils 20221126's words, as printed in namespaces with a 1400-byte link behind a router.
const fragNeeded = `PING 10.9.2.2 (10.9.2.2) 1472(1500) bytes of data.
From 10.9.1.1 icmp_seq=1 Frag needed and DF set (mtu = 1400)

--- 10.9.2.2 ping statistics ---
1 packets transmitted, 0 received, +1 errors, 100% packet loss, time 0ms
`;
// The same over IPv6 (a router's ICMPv6 Packet Too Big).
const packetTooBig = `PING fd09:2::2(fd09:2::2) 1452 data bytes
From fd09:1::1 icmp_seq=1 Packet too big: mtu=1400

--- fd09:2::2 ping statistics ---
1 packets transmitted, 0 received, +1 errors, 100% packet loss, time 0ms
`;
const alreadyKnown = {
  stdout: `PING 10.9.2.2 (10.9.2.2) 1472(1500) bytes of data.

--- 10.9.2.2 ping statistics ---
1 packets transmitted, 0 received, +1 errors, 100% packet loss, time 0ms
`,
  stderr: 'ping: local error: message too long, mtu=1400\n',
};
const answered = `PING 10.9.2.2 (10.9.2.2) 1472(1500) bytes of data.
1480 bytes from 10.9.2.2: icmp_seq=1 ttl=63 time=0.047 ms

--- 10.9.2.2 ping statistics ---
1 packets transmitted, 1 received, 0% packet loss, time 0ms
`;
const silence = `PING 10.9.2.2 (10.9.2.2) 1472(1500) bytes of data.

--- 10.9.2.2 ping statistics ---
1 packets transmitted, 0 received, 100% packet loss, time 0ms
`;

describe('lab path MTU probe (ping with DF set)', () => {
  it('passes on a fragmentation needed naming a smaller MTU, told now or earlier', () => {
    assert.deepEqual(pathMtuVerdict(1, fragNeeded, '', 1500), { ok: true, detail: 'fragmentation needed from 10.9.1.1, mtu 1400' });
    assert.deepEqual(pathMtuVerdict(1, packetTooBig, '', 1500), { ok: true, detail: 'fragmentation needed from fd09:1::1, mtu 1400' });
    assert.deepEqual(pathMtuVerdict(1, alreadyKnown.stdout, alreadyKnown.stderr, 1500), {
      ok: true,
      detail: 'the pod already holds path MTU 1400 (told earlier)',
    });
  });

  it("fails on an answer, on silence, and on an MTU not below the pod's, saying which", () => {
    assert.deepEqual(pathMtuVerdict(0, answered, '', 1500), {
      ok: false,
      detail: "a 1500-byte packet with DF set was answered: nothing told the pod that the tunnel's headers do not fit",
    });
    assert.deepEqual(pathMtuVerdict(1, silence, '', 1500), {
      ok: false,
      detail: 'a 1500-byte packet with DF set was dropped and no fragmentation needed came back (a black hole)',
    });
    assert.deepEqual(pathMtuVerdict(1, fragNeeded, '', 1400), {
      ok: false,
      detail: "fragmentation needed from 10.9.1.1, mtu 1400: not below the pod's MTU 1400",
    });
  });

  it('is a failure of the probe when ping gave no answer at all', () => {
    assert.throws(
      () => pathMtuVerdict(2, '', 'ping: sendmsg: Operation not permitted\n', 1500),
      /ping did not give an answer \(exit 2\): ping: sendmsg: Operation not permitted/,
    );
  });
});

describe('lab fragment counters around the bulk echoes', () => {
  const before = [
    { wire: 'cluster-a <-> cluster-b', packets: 100, fragments: 7 },
    { wire: 'underlay cluster-a', packets: 50, fragments: 3 },
  ];

  it('passes when no wire carried a fragment and every peering carried packets', () => {
    const r = fragmentResult(before, [
      { wire: 'cluster-a <-> cluster-b', packets: 3100, fragments: 7 },
      { wire: 'underlay cluster-a', packets: 50, fragments: 3 },
    ]);
    assert.equal(r.ok, true);
    assert.equal(
      fragmentLine(r),
      'ok   no fragments on the wire during pmtu-tcp (fragments of packets): cluster-a <-> cluster-b 0 of 3000, underlay cluster-a 0 of 0',
    );
  });

  it('fails on a fragment on any wire, and on a peering that carried nothing', () => {
    const fragmented = fragmentResult(before, [
      { wire: 'cluster-a <-> cluster-b', packets: 3100, fragments: 7 },
      { wire: 'underlay cluster-a', packets: 2050, fragments: 1003 },
    ]);
    assert.equal(fragmented.ok, false);
    assert.equal(
      fragmentLine(fragmented),
      'FAIL no fragments on the wire during pmtu-tcp (fragments of packets): cluster-a <-> cluster-b 0 of 3000, underlay cluster-a 1000 of 2000',
    );
    assert.equal(fragmentResult(before, before).ok, false, 'a peering without packets says nothing about fragments');
  });
});

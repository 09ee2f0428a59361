/**
 * Fuzzes both programs on a gateway (and on a worker) with valid packets of every kind, then the same bytes flipped,
 * truncated, extended or with odd header fields (half of them with their checksums repaired, so odd
 * but valid packets reach the deeper paths). Every run must give a known verdict and a packet of the
 * same length; every packet the program changed must carry valid checksums if it came in with them.
 * Seeded: a failure prints the seed and case to reproduce it.
 */
import assert from 'node:assert/strict';
import { requireRoot } from '../../support/kernel';
import {
  EtherType,
  IcmpType,
  type L4,
  checksumProblems,
  datagram,
  ethernet,
  fragments,
  frame,
  repairChecksums,
} from '../../support/packet';
import { Datapath, TC_ACT_OK, TC_ACT_REDIRECT, TC_ACT_SHOT } from './fixture';
import { prng } from '../../support/prng';

const CASES = 100_000;
const SEED = Number(process.env.STRAIT_FUZZ_SEED ?? 0x5eed);
const IPV4_MIN_FRAME = 14 + 20;
/** BPF_PROG_TEST_RUN refuses IP frames shorter than their fixed header. */
const testable = (f: Buffer) => f.length >= ({ [EtherType.IPv4]: IPV4_MIN_FRAME, [EtherType.IPv6]: 14 + 40 }[f.readUInt16BE(12)] ?? 15);

/** Addresses from every prefix the programs look at, and a few from none. */
const addresses = [
  '10.0.7.9',
  '10.0.3.4',
  '10.0.0.5', // our pods (one on another node, one on the gateway's)
  '172.16.4.5',
  '172.16.9.9',
  '192.168.33.1', // P, and P's ExternalCIDR
  '10.32.1.2',
  '10.33.0.40', // Q
  '10.60.7.9',
  '10.70.9.7',
  '10.70.9.8',
  '10.70.9.250',
  '10.70.9.99', // us in P's view
  '10.201.5.7',
  '10.201.5.8',
  '10.201.5.250', // our ExternalCIDR (NatMappings, transit)
  '8.8.8.8',
  '0.0.0.0',
  '255.255.255.255',
];

function seeds(pick: <T>(xs: readonly T[]) => T, rand: () => number): Buffer {
  const src = pick(addresses);
  const dst = pick(addresses);
  const payload = Buffer.alloc(Math.floor(rand() * 80), Math.floor(rand() * 256));
  const port = () => Math.floor(rand() * 65536);
  const l4s: L4[] = [
    { kind: 'tcp', sport: port(), dport: port(), payload },
    { kind: 'udp', sport: port(), dport: port(), payload },
    { kind: 'udp', sport: port(), dport: port(), payload, zeroChecksum: true },
    { kind: 'icmp-echo', type: pick([0, 8] as const), id: port(), payload },
    { kind: 'raw', proto: 47, payload },
  ];
  const l4 = pick(l4s);
  switch (Math.floor(rand() * 6)) {
    case 0: {
      const quoted = datagram({ src: dst, dst: src }, pick(l4s));
      return frame(
        { src, dst },
        {
          kind: 'icmp-error',
          type: pick([IcmpType.DestUnreachable, IcmpType.TimeExceeded, 12, 4, 5]),
          code: 3,
          quote: quoted.subarray(0, 20 + Math.floor(rand() * (quoted.length - 19))),
        },
      );
    }
    case 1: {
      const big = { ...l4, payload: Buffer.alloc(64 + Math.floor(rand() * 100), 7) } as L4;
      return ethernet(pick(fragments({ src, dst }, big, 8 * (1 + Math.floor(rand() * 8)))));
    }
    case 2:
      return ethernet(Buffer.alloc(40 + Math.floor(rand() * 40), 0x11), undefined, pick([EtherType.ARP, EtherType.IPv6, 0x8100]));
    default:
      return frame({ src, dst, options: rand() < 0.1 ? Buffer.from([1, 1, 1, 0]) : undefined }, l4);
  }
}

function mutate(f: Buffer, rand: () => number): Buffer {
  const g = Buffer.from(f);
  const at = (limit = g.length) => Math.floor(rand() * Math.min(limit, g.length));
  switch (Math.floor(rand() * 7)) {
    case 0:
      return g;
    case 1:
      for (let i = 0, n = 1 + Math.floor(rand() * 4); i < n; i++) g[at()] ^= 1 << Math.floor(rand() * 8);
      return g;
    case 2:
      for (let i = 0, n = 1 + Math.floor(rand() * 3); i < n; i++) g[14 + at(50)] = Math.floor(rand() * 256);
      return g;
    case 3:
      return g.subarray(0, Math.max(IPV4_MIN_FRAME, Math.floor(rand() * g.length)));
    case 4:
      return Buffer.concat([g, Buffer.alloc(1 + Math.floor(rand() * 40), Math.floor(rand() * 256))]);
    case 5: {
      // One IP header field set to a random value: version/IHL, total length, flags/offset, protocol.
      const field = Math.floor(rand() * 4);
      if (g.length < IPV4_MIN_FRAME) return g;
      if (field === 0) g[14] = Math.floor(rand() * 256);
      if (field === 1) g.writeUInt16BE(Math.floor(rand() * 65536), 16);
      if (field === 2) g.writeUInt16BE(Math.floor(rand() * 65536), 20);
      if (field === 3) g[23] = [1, 6, 17, 47, Math.floor(rand() * 256)][Math.floor(rand() * 5)]!;
      return g;
    }
    default: {
      // Something in the L4 header or a quoted header: ICMP type, ports, offsets.
      for (let i = 0, n = 1 + Math.floor(rand() * 3); i < n; i++) g[34 + at(40)] = Math.floor(rand() * 256);
      return g;
    }
  }
}

describe('datapath: fuzz (BPF_PROG_TEST_RUN)', function () {
  requireRoot(this);
  this.timeout(300_000);

  it(`survives ${CASES.toLocaleString('en')} random and mutated packets with valid checksums on what it changes (seed ${SEED})`, async () => {
    const gateway = (await Datapath.load()).program('gateway');
    let worker: Datapath | undefined;
    try {
      worker = (await Datapath.load()).program('worker');
      const roles = { gateway, worker };
      const rand = prng(SEED);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
      const seen = { changed: 0, checked: 0, verdicts: new Map<number, number>() };
      for (let i = 0; i < CASES; i++) {
        let input = mutate(seeds(pick, rand), rand);
        if (rand() < 0.5) input = repairChecksums(input);
        if (!testable(input)) continue;
        const name = rand() < 0.5 ? 'fromPod' : 'fromOverlay';
        const role = rand() < 0.9 ? 'gateway' : 'worker';
        const dp = roles[role];
        const validIn = checksumProblems(input).length === 0;
        const r = dp.run(name, input);
        const where = `case ${i} (seed ${SEED}), ${role} ${name}, input ${input.toString('hex')}`;
        assert.ok([TC_ACT_OK, TC_ACT_SHOT, TC_ACT_REDIRECT].includes(r.retval), `verdict ${r.retval}: ${where}`);
        assert.equal(r.data.length, input.length, `length changed: ${where}`);
        seen.verdicts.set(r.retval, (seen.verdicts.get(r.retval) ?? 0) + 1);
        if (r.data.equals(input)) continue;
        seen.changed++;
        if (!validIn) continue;
        seen.checked++;
        assert.deepEqual(checksumProblems(r.data), [], `output ${r.data.toString('hex')}: ${where}`);
      }
      // The fuzzer must reach the translating paths, not only the pass-through ones.
      assert.ok(seen.checked > CASES / 20, `only ${seen.checked} changed packets were checked`);
      for (const v of [TC_ACT_OK, TC_ACT_SHOT, TC_ACT_REDIRECT])
        assert.ok((seen.verdicts.get(v) ?? 0) > CASES / 50, `verdict ${v} seen ${seen.verdicts.get(v) ?? 0} times`);
    } finally {
      gateway.close();
      worker?.close();
    }
  });
});

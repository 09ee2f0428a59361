/**
 * Fuzzes both programs on a gateway (and on a worker) with valid packets of every kind, then the same bytes flipped,
 * truncated, extended or with odd header fields (half of them with their checksums repaired, so odd
 * but valid packets reach the deeper paths). Every run must give a known verdict and a packet of the
 * same length; every packet the program changed must carry valid checksums if it came in with them.
 * IPv6 likewise, its maps programmed too (fixture6.ts), with extension headers, fragments and ICMPv6 errors.
 * Seeded: a failure prints the seed and case to reproduce it.
 */
import assert from 'node:assert/strict';
import { DropReason } from '../../../src/dataplane/ebpf/layout';
import { requireRoot } from '../../support/kernel';
import {
  EtherType,
  IcmpType,
  type L4,
  NextHeader,
  checksumProblems,
  datagram,
  datagram6,
  ethernet,
  extensionHeader,
  fragmentHeader,
  frame,
  frame6,
  fragments,
  repairChecksums,
} from '../../support/packet';
import { Datapath, TC_ACT_OK, TC_ACT_REDIRECT, TC_ACT_SHOT } from './fixture';
import { programIpv6 } from './fixture6';
import { prng } from '../../support/prng';

const CASES = 100_000;
const CASES6 = 50_000;
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

/** IPv6 addresses from every prefix the programs look at (fixture6.ts), link-local, multicast and none. */
const addresses6 = [
  'fd00:a:0:8000:7::9',
  'fd00:a:0:ffff::77', // our pods (on the gateway's node, on another)
  'fd17:16:0:1::5',
  'fd19:2:1:3abc::1', // P
  'fd10:32:0:1a::5',
  'fd10:33::3f', // Q
  'fd60:6:0:8000:7::9',
  'fd70:9:0:9f7::7',
  'fd70:9:0:9f8::8',
  'fd70:9:0:9aa::1', // us in P's view
  'fd00:e:0:5f7::7',
  'fd00:e:0:5f8::8', // our ExternalCIDR (P's pod reflected to Q: hub transit, strait_transit6)
  'fd70:9:0:9ff::fa', // our transit address in P's view (replies of transit flows)
  'fe80::1',
  'ff02::1:ff00:5',
  '2001:db8::1',
  '::',
];

function seeds6(pick: <T>(xs: readonly T[]) => T, rand: () => number): Buffer {
  const src = pick(addresses6);
  const dst = pick(addresses6);
  const payload = Buffer.alloc(Math.floor(rand() * 80), Math.floor(rand() * 256));
  const port = () => Math.floor(rand() * 65536);
  const l4s: L4[] = [
    { kind: 'tcp', sport: port(), dport: port(), payload },
    { kind: 'udp', sport: port(), dport: port(), payload },
    { kind: 'icmp-echo', type: pick([128, 129] as const), id: port(), payload },
    { kind: 'raw', proto: 58, payload: Buffer.concat([Buffer.from([pick([135, 136, 133]), 0, 0, 0]), payload]) },
  ];
  const exts = [
    extensionHeader(NextHeader.HopByHop),
    extensionHeader(NextHeader.DestOptions, 16),
    fragmentHeader(8 * Math.floor(rand() * 3), rand() < 0.5),
  ];
  const extensions = rand() < 0.3 ? exts.slice(Math.floor(rand() * 3)) : undefined;
  if (rand() < 0.2) {
    const quoted = datagram6({ src: dst, dst: src }, pick(l4s));
    const quote = quoted.subarray(0, 40 + Math.floor(rand() * (quoted.length - 39)));
    return frame6({ src, dst }, { kind: 'icmp-error', type: pick([1, 2, 3, 4]), code: 0, quote });
  }
  return frame6({ src, dst, extensions }, pick(l4s));
}

/** Link-local or multicast (fe80::/10, ff00::/8): never the datapath's to touch. */
const linkScope = (f: Buffer, off: number) => f[off] === 0xff || (f[off] === 0xfe && (f[off + 1]! & 0xc0) === 0x80);

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

  it(`survives ${CASES6.toLocaleString('en')} random and mutated IPv6 packets: checksums valid on what it changes, link-local and multicast never touched (seed ${SEED})`, async () => {
    const gateway = programIpv6((await Datapath.load()).program('gateway'));
    let worker: Datapath | undefined;
    try {
      worker = programIpv6((await Datapath.load()).program('worker'));
      const roles = { gateway, worker };
      const rand = prng(SEED);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
      const seen = { checked: 0, verdicts: new Map<number, number>() };
      for (let i = 0; i < CASES6; i++) {
        const input = mutate(seeds6(pick, rand), rand);
        if (!testable(input)) continue;
        const name = rand() < 0.5 ? 'fromPod' : 'fromOverlay';
        const role = rand() < 0.9 ? 'gateway' : 'worker';
        const r = roles[role].run(name, input);
        const where = `case ${i} (seed ${SEED}), ${role} ${name}, input ${input.toString('hex')}`;
        assert.ok([TC_ACT_OK, TC_ACT_SHOT, TC_ACT_REDIRECT].includes(r.retval), `verdict ${r.retval}: ${where}`);
        assert.equal(r.data.length, input.length, `length changed: ${where}`);
        seen.verdicts.set(r.retval, (seen.verdicts.get(r.retval) ?? 0) + 1);
        const v6 = input.readUInt16BE(12) === EtherType.IPv6;
        if (v6 && (linkScope(input, 22) || linkScope(input, 38)))
          assert.deepEqual({ retval: r.retval, data: r.data.toString('hex') }, { retval: TC_ACT_OK, data: input.toString('hex') }, where);
        if (r.data.equals(input) || checksumProblems(input).length) continue;
        seen.checked++;
        assert.deepEqual(checksumProblems(r.data), [], `output ${r.data.toString('hex')}: ${where}`);
      }
      assert.ok(seen.checked > CASES6 / 20, `only ${seen.checked} changed packets were checked`);
      for (const v of [TC_ACT_OK, TC_ACT_SHOT, TC_ACT_REDIRECT])
        assert.ok((seen.verdicts.get(v) ?? 0) > CASES6 / 50, `verdict ${v} seen ${seen.verdicts.get(v) ?? 0} times`);
      // Transit reached strait_transit6 (tail call): flows got SNAT state, and the rest was dropped as such.
      const transitFlows = [...gateway.maps.snat6.keys()].length;
      assert.ok(transitFlows > 10, `only ${transitFlows} strait_snat6 entries`);
      assert.ok(gateway.drops()[DropReason.TransitState]! > 10, `TransitState drops: ${gateway.drops()[DropReason.TransitState]}`);
      assert.equal(gateway.drops()[DropReason.Transit6], 0, 'the tail call always found its program');
    } finally {
      gateway.close();
      worker?.close();
    }
  });
});

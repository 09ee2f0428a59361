/**
 * The binding's floor figures: map updates one by one vs batched, and BPF_PROG_TEST_RUN of an empty TC
 * program (the per-packet floor that datapath figures are divided by).
 */
import { join } from 'node:path';
import { BpfMap, BpfObject, type BpfProgram, MapType, ipv4, struct, u32, u64 } from '../../src/native';
import { median, type BenchFigure, type BenchSuite } from './result';

const ENTRIES = 100_000;
const key = struct({ addr: ipv4, peer: u32 });
const value = struct({ translated: ipv4, flags: u32, packets: u64 });

const entries = Array.from(
  { length: ENTRIES },
  (_, i) =>
    [
      { addr: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, peer: i % 7 },
      { translated: `172.16.${(i >> 8) & 255}.${i & 255}`, flags: 1, packets: 0n },
    ] as const,
);

function timeMs(fn: () => void): number {
  const start = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

function withHashMap(
  use: (m: BpfMap<{ addr: string; peer: number }, { translated: string; flags: number; packets: bigint }>) => void,
): void {
  const m = BpfMap.create({ type: MapType.Hash, name: 'bench_updates', key, value, maxEntries: ENTRIES });
  try {
    use(m);
  } finally {
    m.close();
  }
}

/** A 64-byte Ethernet + IPv4 + UDP frame. */
export function udpFrame(): Buffer {
  const f = Buffer.alloc(64);
  f.writeUInt16BE(0x0800, 12);
  f.writeUInt8(0x45, 14);
  f.writeUInt16BE(50, 16);
  f.writeUInt8(64, 22);
  f.writeUInt8(17, 23);
  f.set([10, 0, 0, 1], 26);
  f.set([10, 0, 0, 2], 30);
  f.writeUInt16BE(1234, 34);
  f.writeUInt16BE(80, 36);
  f.writeUInt16BE(30, 38);
  return f;
}

/** ns per packet of `prog`: median of 5 kernel-timed runs of 1,000,000 packets. */
export function nsPerPacket(prog: BpfProgram, frame = udpFrame()): number {
  return median(Array.from({ length: 5 }, () => prog.testRun(frame, { repeat: 1_000_000 }).durationNs));
}

export const emptyProgramPath = join(__dirname, '..', '..', 'bpf', 'test', 'empty.o');

export const run: BenchSuite = async () => {
  const figures: BenchFigure[] = [];
  const one = median(
    Array.from({ length: 3 }, () => {
      let ms = 0;
      withHashMap((m) => {
        ms = timeMs(() => {
          for (const [k, v] of entries) m.update(k, v);
        });
      });
      return ms;
    }),
  );
  const batched = median(
    Array.from({ length: 3 }, () => {
      let ms = 0;
      withHashMap((m) => {
        ms = timeMs(() => {
          for (let i = 0; i < ENTRIES; i += 10_000) m.updateBatch(entries.slice(i, i + 10_000));
        });
      });
      return ms;
    }),
  );
  const rate = (ms: number) => Math.round(ENTRIES / (ms / 1000));
  figures.push(
    {
      suite: 'maps',
      name: 'hash map update, one by one (100,000 entries)',
      value: rate(one),
      unit: 'entries/s',
      note: `${one.toFixed(0)} ms`,
    },
    {
      suite: 'maps',
      name: 'hash map update, batches of 10,000 (100,000 entries)',
      value: rate(batched),
      unit: 'entries/s',
      note: `${batched.toFixed(0)} ms`,
    },
    { suite: 'maps', name: 'batched / one by one', value: Number((one / batched).toFixed(2)), unit: 'x' },
  );
  const empty = await BpfObject.load(emptyProgramPath);
  try {
    figures.push({
      suite: 'maps',
      name: 'empty TC program, BPF_PROG_TEST_RUN (floor)',
      value: nsPerPacket(empty.program('empty')),
      unit: 'ns/packet',
      note: '64-byte UDP frame, median of 5 x 1M',
    });
  } finally {
    empty.close();
  }
  return figures;
};

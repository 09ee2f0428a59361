import assert from 'node:assert/strict';
import { axisTop, ratioChart } from './chart';
import { type Measurement, type PathFigures, markdownTable, ratios } from './results';

const limit: PathFigures = { connPerS: 20_000, p50Us: 40, p99Us: 80, gbps: 16, fragments: 0 };
const hub: Measurement = {
  path: 'eBPF hub',
  mappings: 100_000,
  figures: {
    connPerS: 15_000,
    p50Us: 50,
    p99Us: 120,
    gbps: 4,
    fragments: 1234,
    bpf: { strait_from_pod: { runs: 10, nsPerRun: 250 }, strait_from_overlay: { runs: 20, nsPerRun: 300 } },
  },
  limit,
};
const incumbent: Measurement = {
  path: 'incumbent hub',
  mappings: 1,
  figures: { connPerS: 5_000, p50Us: 60, p99Us: 200, gbps: 2, fragments: 7 },
  limit,
};

describe("the e2e bench's results (pure)", () => {
  it('divides each figure by the limit measured with it, to two decimals', () => {
    assert.deepEqual(ratios(hub), { connPerS: 0.75, p99: 1.5, gbps: 0.25 });
    assert.deepEqual(ratios({ ...incumbent, figures: { ...incumbent.figures, connPerS: 6_667 } }), {
      connPerS: 0.33,
      p99: 2.5,
      gbps: 0.13,
    });
  });

  it("prints one Markdown row per measurement with its ratios and the programs' ns per run", () => {
    assert.equal(
      markdownTable([hub, incumbent]),
      [
        '| path | NatMappings | conn/s | × limit | p50 µs | p99 µs | × limit | Gbit/s | × limit | fragments | eBPF ns/run |',
        '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
        '| eBPF hub | 100,000 | 15,000 | 0.75 | 50.0 | 120.0 | 1.50 | 4.00 | 0.25 | 1,234 | from_overlay 300, from_pod 250 |',
        '| incumbent hub | 1 | 5,000 | 0.25 | 60.0 | 200.0 | 2.50 | 2.00 | 0.13 | 7 |  |',
        '',
      ].join('\n'),
    );
  });

  it('scales the chart to 1.2 at least, else to the largest ratio rounded up to a half', () => {
    assert.equal(axisTop([0.3, 0.9]), 1.2);
    assert.equal(axisTop([2.5, 0.4]), 2.5);
    assert.equal(axisTop([2.6]), 3);
  });

  it('draws a bar per path and size in each of the three panels, the limit rows left out, with the limit line at 1', () => {
    const svg = ratioChart([{ ...hub, path: 'limit (eBPF lab)', figures: limit }, hub, incumbent]);
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    const bars = [...svg.matchAll(/<rect [^>]*><title>([^<]*)<\/title>/g)].map((m) => m[1]);
    assert.deepEqual(bars, [
      'eBPF hub, 100,000 NatMappings: 0.75',
      'incumbent hub, 1 NatMappings: 0.25',
      'eBPF hub, 100,000 NatMappings: 1.5',
      'incumbent hub, 1 NatMappings: 2.5',
      'eBPF hub, 100,000 NatMappings: 0.25',
      'incumbent hub, 1 NatMappings: 0.13',
    ]);
    // The p99 panel's axis runs to 2.5: the bar of 2.5 spans the whole plot (220 px), the dashed limit line sits at 1/2.5 of it.
    assert.match(svg, /height="220" fill="#4e79a7"><title>incumbent hub, 1 NatMappings: 2\.5</);
    assert.match(svg, /text-anchor="end">1\.25<\/text>/);
    assert.match(svg, /<line x1="360" y1="172" x2="630" y2="172" stroke="grey" stroke-dasharray="4 3"\/>/);
    assert.doesNotMatch(svg, /limit \(eBPF lab\)/);
  });
});

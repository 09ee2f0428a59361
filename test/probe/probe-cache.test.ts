import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ProbeReport } from '../../src/probe/features';
import { cachedProbe, probeCacheKey } from '../../src/probe/probe-cache';

/** A report no kernel gives (eBPF without tcx, no IPsec), so one read back from the file is recognised. */
const report: ProbeReport = {
  features: {
    bpf: true,
    btf: true,
    clsact: true,
    tcx: false,
    testRun: true,
    lpmTrie: true,
    lpmTrie6: true,
    vxlan: true,
    vxlanCollectMd: true,
    routes: true,
    routes6: true,
    policyRouting: true,
    policyRouting6: false,
    nftables: true,
    nftables6: true,
    xfrm: true,
    xfrm6: true,
    esp: false,
    esp6: false,
    xfrmInterface: false,
  },
  reasons: {
    tcx: 'Invalid argument',
    policyRouting6: 'Address family not supported by protocol',
    esp: 'Protocol not supported',
    esp6: 'Protocol not supported',
    xfrmInterface: 'Unknown device type',
  },
};

describe('probe cache', () => {
  let dir: string;
  let path: string;
  let probes: number;
  const probe = async () => {
    probes += 1;
    return structuredClone(report);
  };
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'strait-probe-cache-'));
    path = join(dir, 'run', 'probe-cache.json');
    probes = 0;
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const stored = () => JSON.parse(readFileSync(path, 'utf8')) as { key: Record<string, string>; report: ProbeReport };

  it('probes on the first start of a boot and keeps the report; the next start reads it without probing', async () => {
    assert.deepEqual(await cachedProbe(path, undefined, probe), { report, source: 'probed' });
    assert.equal(probes, 1);
    const key = stored().key;
    assert.equal(key.bootId, readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim());
    assert.match(key.build, /^0\.1\.0\+[0-9a-f]{16}$/);
    assert.match(key.capabilities, /^[0-9a-f]{16}$/);
    assert.deepEqual(await cachedProbe(path, undefined, probe), { report, source: 'cached' });
    assert.equal(probes, 1, 'the second start did not probe');
  });

  for (const part of ['bootId', 'kernel', 'build', 'capabilities'] as const) {
    it(`probes again when the ${part} is not the one the report was kept under`, async () => {
      await cachedProbe(path, undefined, probe);
      const file = stored();
      writeFileSync(path, JSON.stringify({ ...file, key: { ...file.key, [part]: `other-${file.key[part]}` } }));
      assert.equal((await cachedProbe(path, undefined, probe)).source, 'probed');
      assert.equal(probes, 2);
      assert.deepEqual(stored().key, probeCacheKey(), "the file holds this start's key again");
    });
  }

  const corrupt: [string, (text: string) => string][] = [
    ['cut short', (text) => text.slice(0, text.length / 2)],
    ['empty', () => ''],
    ['missing a feature', (text) => text.replace(/"lpmTrie": true,\s*/, '')],
    ['missing an IPv6 feature (a report of the probe before it probed per family)', (text) => text.replace(/"nftables6": true,\s*/, '')],
    ['with a feature that is not a boolean', (text) => text.replace('"bpf": true', '"bpf": "yes"')],
    ['with an unknown feature', (text) => text.replace('"bpf": true', '"bpf": true, "wormholes": true')],
    ['with a reason that is not a string', (text) => text.replace('"Invalid argument"', '22')],
    ['without a key', (text) => JSON.stringify({ report: JSON.parse(text).report })],
  ];
  for (const [what, spoil] of corrupt) {
    it(`probes again over a file ${what}, and writes it whole`, async () => {
      await cachedProbe(path, undefined, probe);
      writeFileSync(path, spoil(readFileSync(path, 'utf8')));
      assert.deepEqual(await cachedProbe(path, undefined, probe), { report, source: 'probed' });
      assert.equal(probes, 2);
      assert.deepEqual(stored().report, report);
    });
  }

  it('still gives the report when it cannot be kept, and says why', async () => {
    writeFileSync(join(dir, 'run'), 'a file where the directory should be');
    const got = await cachedProbe(path, undefined, probe);
    assert.deepEqual([got.report, got.source], [report, 'probed']);
    assert.match(got.writeError ?? '', /ENOTDIR|EEXIST/);
  });
});

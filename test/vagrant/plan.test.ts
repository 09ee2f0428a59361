/**
 * vagrant/plan.rb: the multi-VM lab's plan in Ruby, which the Vagrantfile reads before any VM exists. It must
 * say what `strait-lab plan` says, for the addresses and MACs the VMs get are the ones `lab up --node` looks
 * for.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';

const repo = join(__dirname, '..', '..', '..');
const topologies = join(repo, 'lab', 'src', 'topologies');
const labPath = join(repo, 'dist', 'lab', 'src', 'main.js');

/** `ruby vagrant/plan.rb FILE`: the exit status, the parsed JSON when it printed some, and stderr. */
function rubyPlan(file: string) {
  const out = spawnSync('ruby', [join(repo, 'vagrant', 'plan.rb'), file], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(out.error, undefined, `ruby could not run: ${out.error?.message} (.ci/setup installs it with vagrant)`);
  return { status: out.status, plan: out.status === 0 ? (JSON.parse(out.stdout) as unknown) : undefined, stderr: out.stderr };
}

/** The plan of a topology written to a temporary file. */
function planOf(doc: unknown) {
  const dir = mkdtempSync(join(tmpdir(), 'strait-plan-'));
  try {
    writeFileSync(join(dir, 'topology.yaml'), stringify(doc));
    return rubyPlan(join(dir, 'topology.yaml'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const nic = (name: string, network: string, mac: string, address: string) => ({ name, network, mac, address });
const machine = (name: string, cluster: string, controller: boolean, i: string, underlay: string, pub: string) => ({
  name,
  cluster,
  controller,
  nics: [nic('ul0', `underlay-${cluster}`, `52:54:00:5a:${i}:00`, underlay), nic('pub0', 'public', `52:54:00:5a:${i}:01`, pub)],
});

/** A topology of `clusters` clusters of `nodes` nodes each, the smallest the plan accepts. */
const generated = (clusters: number, nodes: number) => ({
  public: '203.0.113.0/24',
  clusters: Array.from({ length: clusters }, (_, c) => ({
    id: `k${c}`,
    podCIDR: '10.0.0.0/16',
    externalCIDR: '10.200.0.0/24',
    underlay: `192.168.${c + 1}.0/24`,
    nodes: Array.from({ length: nodes }, (_, n) => ({ name: `k${c}-n${n}`, podCIDR: `10.0.${n}.0/24` })),
  })),
});

describe('vagrant/plan.rb', () => {
  it("derives the default topology's networks, machines, MACs and addresses", () => {
    const out = rubyPlan(join(topologies, 'default.yaml'));
    assert.equal(out.status, 0, out.stderr);
    assert.deepEqual(out.plan, {
      mtu: 1500,
      networks: [
        { name: 'public', cidr: '203.0.113.0/24' },
        { name: 'underlay-cluster-a', cidr: '192.168.1.0/24' },
        { name: 'underlay-cluster-b', cidr: '192.168.2.0/24' },
        { name: 'underlay-cluster-c', cidr: '192.168.3.0/24' },
      ],
      machines: [
        machine('a-gw', 'cluster-a', true, '01', '192.168.1.1/24', '203.0.113.11/24'),
        machine('a-w1', 'cluster-a', false, '02', '192.168.1.2/24', '203.0.113.12/24'),
        machine('b-gw', 'cluster-b', true, '03', '192.168.2.1/24', '203.0.113.21/24'),
        machine('b-w1', 'cluster-b', false, '04', '192.168.2.2/24', '203.0.113.22/24'),
        machine('c-gw', 'cluster-c', true, '05', '192.168.3.1/24', '203.0.113.31/24'),
        machine('c-w1', 'cluster-c', false, '06', '192.168.3.2/24', '203.0.113.32/24'),
      ],
    });
  });

  it("numbers machines across clusters in hexadecimal, and keeps the topology's MTU", () => {
    const out = planOf({ ...generated(4, 3), mtu: 9000 });
    assert.equal(out.status, 0, out.stderr);
    const plan = out.plan as { mtu: number; machines: { name: string; controller: boolean; nics: { mac: string; address: string }[] }[] };
    assert.equal(plan.mtu, 9000);
    assert.deepEqual(plan.machines.map((m) => [m.name, m.controller, m.nics[0]!.mac, m.nics[1]!.mac, m.nics[1]!.address]).slice(8), [
      ['k2-n2', false, '52:54:00:5a:09:00', '52:54:00:5a:09:01', '203.0.113.33/24'],
      ['k3-n0', true, '52:54:00:5a:0a:00', '52:54:00:5a:0a:01', '203.0.113.41/24'],
      ['k3-n1', false, '52:54:00:5a:0b:00', '52:54:00:5a:0b:01', '203.0.113.42/24'],
      ['k3-n2', false, '52:54:00:5a:0c:00', '52:54:00:5a:0c:01', '203.0.113.43/24'],
    ]);
  });

  it('equals `strait-lab plan` for every topology of the repository', () => {
    const files = readdirSync(topologies)
      .filter((f) => f.endsWith('.yaml'))
      .sort();
    // Not an empty loop: the six topologies there are when this was written, at least.
    assert.ok(files.length >= 6 && files.includes('default.yaml') && files.includes('two-clusters.yaml'), files.join(', '));
    for (const f of files) {
      const file = join(topologies, f);
      const cli = spawnSync(process.execPath, [labPath, 'plan', '--topology', file], { encoding: 'utf8', timeout: 20_000 });
      assert.equal(cli.status, 0, `strait-lab plan --topology ${f}: ${cli.stderr}`);
      const ruby = rubyPlan(file);
      assert.equal(ruby.status, 0, `plan.rb ${f}: ${ruby.stderr}`);
      assert.deepEqual(ruby.plan, JSON.parse(cli.stdout), f);
    }
  });

  it('refuses a bad topology, naming the field and the value', () => {
    const bad = (change: (d: any) => void) => {
      const d: any = generated(2, 2);
      change(d);
      const out = planOf(d);
      assert.equal(out.status, 1, `accepted: ${JSON.stringify(out.plan)}`);
      assert.equal(out.plan, undefined);
      return out.stderr;
    };
    assert.match(
      bad((d) => {
        d.clusters[1].underlay = '192.168.2.1/24';
      }),
      /clusters\[1\]\.underlay: host bits are set; did you mean 192\.168\.2\.0\/24\? \(got "192\.168\.2\.1\/24"\)/,
    );
    assert.match(
      bad((d) => {
        d.public = '203.0.113.0/29';
      }),
      /public: is too small for 11 hosts \(got "203\.0\.113\.0\/29"\)/,
    );
    assert.match(
      bad((d) => {
        d.clusters[0].underlay = '192.168.1.0/31';
      }),
      /clusters\[0\]\.underlay: is too small for 1 hosts \(got "192\.168\.1\.0\/31"\)/,
    );
    assert.match(
      bad((d) => {
        delete d.clusters[0].underlay;
      }),
      /clusters\[0\]\.underlay: expected a CIDR string like 10\.0\.0\.0\/16 \(got null\)/,
    );
    assert.match(
      bad((d) => {
        d.clusters[1].nodes[0].name = 'k0-n1';
      }),
      /clusters\[1\]\.nodes\[0\]\.name: is used twice .* \(got "k0-n1"\)/,
    );
    assert.match(
      bad((d) => {
        d.clusters[0].nodes[1].name = 'Node_1';
      }),
      /clusters\[0\]\.nodes\[1\]\.name: must be 1-11 characters: a-z, 0-9, -, starting with a letter \(got "Node_1"\)/,
    );
    assert.match(
      bad((d) => {
        d.clusters[0].id = 'K0';
      }),
      /clusters\[0\]\.id: a cluster id is .* \(got "K0"\)/,
    );
    assert.match(
      bad((d) => {
        d.clusters[1].nodes = [];
      }),
      /clusters\[1\]\.nodes: expected at least 1 item \(got \[\]\)/,
    );
    assert.match(
      bad((d) => {
        d.mtu = 576;
      }),
      /mtu: must be an integer from 1280 to 9000 \(got 576\)/,
    );
    // A cluster's public addresses are a decade of their own (11-19 for the first): the tenth node's
    // would be the next cluster's first.
    assert.match(
      bad((d) => {
        d.clusters[0].nodes = generated(1, 10).clusters[0]!.nodes;
      }),
      /clusters\[0\]\.nodes: expected at most 9 items: .* \(got 10\)/,
    );
    // The MAC's fifth byte numbers the machines: 256 do not fit (29 clusters of 9 are 261).
    assert.match(
      bad((d) => {
        Object.assign(d, generated(29, 9));
        d.public = '10.0.0.0/16';
      }),
      /clusters\[28\]\.nodes\[3\]: is machine 256: a plan has at most 255/,
    );
  });
});

/**
 * vagrant/Vagrantfile, checked by Vagrant itself without a VM, a box or a network: `vagrant validate` and
 * `vagrant status` against libvirt's in-process test driver (test:///default: no libvirtd needed). Vagrant's
 * state goes to a temporary directory, not into the repository.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const repo = join(__dirname, '..', '..', '..');
const vagrantDir = join(repo, 'vagrant');

describe('vagrant/Vagrantfile', () => {
  let state: string;
  before(() => {
    state = mkdtempSync(join(tmpdir(), 'strait-vagrant-'));
  });
  after(() => rmSync(state, { recursive: true, force: true }));

  /** A vagrant command in vagrant/, with the given settings on top of a clean environment. */
  const vagrant = (args: string[], env: Record<string, string> = {}) => {
    const out = spawnSync('vagrant', args, {
      cwd: vagrantDir,
      encoding: 'utf8',
      timeout: 60_000,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: state,
        VAGRANT_HOME: join(state, 'home'),
        VAGRANT_DOTFILE_PATH: join(state, 'dotfile'),
        VAGRANT_CHECKPOINT_DISABLE: '1',
        LIBVIRT_DEFAULT_URI: 'test:///default',
        ...env,
      },
    });
    assert.equal(out.error, undefined, `vagrant could not run: ${out.error?.message} (.ci/setup installs vagrant and vagrant-libvirt)`);
    return { status: out.status, output: out.stdout + out.stderr };
  };

  it("passes `vagrant validate` with the libvirt provider, and with VirtualBox's provider settings ignored", () => {
    const libvirt = vagrant(['validate']);
    assert.equal(libvirt.status, 0, libvirt.output);
    assert.match(libvirt.output, /Vagrantfile validated successfully/);
    // Without VirtualBox installed, Vagrant refuses to validate its provider settings: only -p works here.
    const virtualbox = vagrant(['validate', '--ignore-provider'], { VAGRANT_DEFAULT_PROVIDER: 'virtualbox' });
    assert.equal(virtualbox.status, 0, virtualbox.output);
    assert.match(virtualbox.output, /Vagrantfile validated successfully/);
    assert.equal(existsSync(join(vagrantDir, '.vagrant')), false, 'vagrant wrote its state into the repository');
  });

  it('defines one VM per node of STRAIT_TOPOLOGY, in topology order', () => {
    const machines = (topology: string) => {
      const out = vagrant(['status', '--machine-readable'], { STRAIT_TOPOLOGY: join(repo, 'lab', 'src', 'topologies', topology) });
      assert.equal(out.status, 0, out.output);
      return [...out.output.matchAll(/^\d+,([^,]+),state,(\w+)$/gm)].map((m) => `${m[1]} ${m[2]}`);
    };
    assert.deepEqual(
      machines('default.yaml'),
      ['a-gw', 'a-w1', 'b-gw', 'b-w1', 'c-gw', 'c-w1'].map((m) => `${m} not_created`),
    );
    assert.deepEqual(
      machines('distinct.yaml'),
      ['e-gw', 'e-w1', 'h-gw', 'h-w1', 'w-gw', 'w-w1'].map((m) => `${m} not_created`),
    );
  });

  it('refuses a topology outside the repository, a bad topology naming its field, and a bad memory size', () => {
    const outside = vagrant(['validate'], { STRAIT_TOPOLOGY: '/etc/hostname' });
    assert.notEqual(outside.status, 0);
    assert.match(outside.output, /STRAIT_TOPOLOGY: must be a file inside the repository .* \(got "\/etc\/hostname"\)/);
    const bad = vagrant(['validate'], { STRAIT_TOPOLOGY: join(repo, 'package.json') });
    assert.notEqual(bad.status, 0);
    assert.match(bad.output, /STRAIT_TOPOLOGY .*package\.json: public: expected a CIDR string like 10\.0\.0\.0\/16 \(got null\)/);
    const memory = vagrant(['validate'], { STRAIT_VM_MEMORY: '2g' });
    assert.notEqual(memory.status, 0);
    assert.match(memory.output, /STRAIT_VM_MEMORY: expected a positive integer \(got "2g"\)/);
  });
});

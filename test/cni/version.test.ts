import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cniError, pluginPath, runStraitIpam } from './plugin-process';

// No service runs: a version the plugin let through would end in code 11, not 1.
const network = {
  name: 'underlay',
  type: 'macvlan',
  master: 'eth0',
  ipam: { type: 'strait-ipam', socket: '/nonexistent/strait-test/ipam.sock' },
};

describe('strait-ipam versions', () => {
  // Spec "VERSION": the output's cniVersion is the input's (issue 24: it was 1.1.0 whatever was asked).
  it('answers VERSION in the version stdin asks in when it speaks it, else in its latest, never failing', async () => {
    const asked = async (stdin: string) => {
      const run = await runStraitIpam({ CNI_COMMAND: 'VERSION' }, stdin);
      assert.equal(run.status, 0, run.stdout);
      assert.deepEqual(JSON.parse(run.stdout).supportedVersions, ['1.0.0', '1.1.0']);
      return JSON.parse(run.stdout).cniVersion as string;
    };
    assert.deepEqual(
      [
        await asked('{"cniVersion":"1.0.0"}'),
        await asked('{"cniVersion":"1.1.0"}'),
        await asked('{"cniVersion":"0.4.0"}'),
        await asked('{"cniVersion":"1.2.0"}'),
        await asked('not a configuration'),
        await asked(''),
      ],
      ['1.0.0', '1.1.0', '1.1.0', '1.1.0', '1.1.0', '1.1.0'],
    );
  });

  it('refuses a configuration of a CNI version it does not speak with code 1, naming the version', async () => {
    const env = { CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'c1', CNI_IFNAME: 'net1' };
    assert.deepEqual(cniError(await runStraitIpam(env, { cniVersion: '0.4.0', ...network })), {
      cniVersion: '1.1.0',
      code: 1,
      msg: 'cniVersion: strait-ipam speaks 1.0.0 and 1.1.0 (got "0.4.0")',
    });
    assert.deepEqual(cniError(await runStraitIpam(env, network)), {
      cniVersion: '1.1.0',
      code: 1,
      msg: 'cniVersion: missing, which CNI reads as 0.1.0; strait-ipam speaks 1.0.0 and 1.1.0',
    });
  });

  // The runtime starts the plugin for every pod's ADD and DEL: packages (pino, ajv, the Kubernetes
  // client) cost tens of milliseconds each, which host-local does not pay.
  it('loads no package from node_modules, only node built-ins and its own modules', () => {
    const { status, stderr } = spawnSync(
      process.execPath,
      [
        '-e',
        `
      process.on('exit', () => process.stderr.write(JSON.stringify(Object.keys(require.cache).filter((k) => k.includes('/node_modules/')))));
      require(${JSON.stringify(pluginPath)});
    `,
      ],
      { encoding: 'utf8', env: { CNI_COMMAND: 'VERSION' } },
    );
    assert.deepEqual({ status, loaded: JSON.parse(stderr) }, { status: 0, loaded: [] });
  });

  // The plugin is copied to hosts without node_modules (src/cni/install.ts): what it checks its input and
  // the service's answers with (the build's validators, src/api/write-validators.ts) must load no package.
  it('checks what it reads with validators that load no package either', () => {
    const config = {
      cniVersion: '1.1.0',
      ...network,
      prevResult: { ips: [{ address: '10.6.0.2/24' }] },
      'cni.dev/valid-attachments': [{ containerID: 'c1', ifname: 'net1' }],
    };
    const attachment = {
      CNI_CONTAINERID: 'c1',
      CNI_NETNS: '/var/run/netns/cni-1',
      CNI_IFNAME: 'net1',
      CNI_ARGS: 'K8S_POD_NAMESPACE=web;K8S_POD_NAME=web-0',
    };
    for (const command of ['ADD', 'CHECK', 'DEL', 'GC', 'STATUS']) {
      const { status, stderr } = spawnSync(
        process.execPath,
        [
          '-e',
          `
        process.on('exit', () => process.stderr.write(JSON.stringify(Object.keys(require.cache).filter((k) => k.includes('/node_modules/')))));
        require(${JSON.stringify(pluginPath)});
      `,
        ],
        { encoding: 'utf8', env: { CNI_COMMAND: command, ...attachment }, input: JSON.stringify(config) },
      );
      // No service runs: each command gets as far as connecting, its input checked.
      assert.deepEqual({ command, status, loaded: JSON.parse(stderr) }, { command, status: 1, loaded: [] });
    }
    // And those of the service's answers, which no service answers here: no format, no length keyword.
    const generated = join(__dirname, '../../src/api/generated-validators');
    for (const name of [
      'cniNetworkConfig',
      'cniPrevResult',
      'cniValidAttachments',
      'poolIpamAddResponse',
      'poolIpamStatusResponse',
      'poolIpamErrorResponse',
    ]) {
      assert.doesNotMatch(readFileSync(join(generated, `${name}.js`), 'utf8'), /require\(/, name);
    }
  });
});

import assert from 'node:assert/strict';
import { parseNetworkConfig } from '../../src/cni/network-config';
import { cniError, runStraitIpam } from './plugin-process';

// No service runs: a configuration the plugin let through would end in code 11, not the code expected.
const socket = '/nonexistent/strait-test/ipam.sock';
const env = {
  CNI_COMMAND: 'ADD',
  CNI_CONTAINERID: 'c1',
  CNI_NETNS: '/var/run/netns/pod',
  CNI_IFNAME: 'net1',
  CNI_ARGS: 'K8S_POD_NAMESPACE=web;K8S_POD_NAME=web-0',
};
const network = (ipam: Record<string, unknown>, top: Record<string, unknown> = {}) => ({
  cniVersion: '1.0.0',
  name: 'underlay',
  type: 'macvlan',
  master: 'eth0',
  ipam: { type: 'strait-ipam', socket, ...ipam },
  ...top,
});

const invalid: [string, object, string][] = [
  [
    'a pool name that is not a DNS-1123 subdomain',
    network({ default_ipv4_ippool: ['v4-a', 'Bad_Pool'] }),
    'ipam.default_ipv4_ippool[1]: must be a pool name (a DNS-1123 subdomain) (got "Bad_Pool")',
  ],
  [
    'a pool name that is not a string',
    network({ default_ipv6_ippool: ['v6-a', 7] }),
    'ipam.default_ipv6_ippool[1]: must be a pool name (a DNS-1123 subdomain) (got 7)',
  ],
  [
    'a pool list that is not a list',
    network({ default_ipv6_ippool: 'v6-a' }),
    'ipam.default_ipv6_ippool: must be a list of pool names (got "v6-a")',
  ],
  [
    'a relative socket path',
    network({ socket: 'run/strait/ipam.sock' }),
    'ipam.socket: must be an absolute path (got "run/strait/ipam.sock")',
  ],
  [
    'a socket path longer than a unix socket path can be',
    network({ socket: `/${'s'.repeat(107)}` }),
    `ipam.socket: is longer than the 107 bytes a unix socket path can have (got "/${'s'.repeat(107)}")`,
  ],
  [
    'a conflict detection switch that is not a boolean',
    network({ detect_ip_conflict: 'yes' }),
    'ipam.detect_ip_conflict: must be true or false (got "yes")',
  ],
  [
    'a gateway detection switch that is not a boolean',
    network({ detect_gateway: 0 }),
    'ipam.detect_gateway: must be true or false (got 0)',
  ],
  ['a type that is not a string', network({ type: 3 }), "ipam.type: must be the plugin's name (got 3)"],
  ['no ipam object', network({}, { ipam: undefined }), 'ipam: missing'],
  ['an ipam that is not an object', network({}, { ipam: ['strait-ipam'] }), 'ipam: must be an object (got ["strait-ipam"])'],
  ['no network name', network({}, { name: undefined }), 'name: missing'],
  [
    'a network name with a character CNI does not allow',
    network({}, { name: 'under lay' }),
    'name: must be a CNI network name (letters, digits, "_", "." and "-", starting with a letter or digit) (got "under lay")',
  ],
];

describe('strait-ipam network configuration', () => {
  // Read here, not through a run: a run without `socket` would ask whatever serves /run/strait/ipam.sock.
  it('defaults to the socket /run/strait/ipam.sock, no default pools, and both detections on', () => {
    const { socket: path, options } = parseNetworkConfig({ name: 'underlay', ipam: { type: 'strait-ipam' } }, '1.1.0');
    assert.deepEqual(
      { path, options },
      {
        path: '/run/strait/ipam.sock',
        options: { defaultIpv4Pools: [], defaultIpv6Pools: [], detectConflict: true, detectGateway: true },
      },
    );
  });

  for (const [what, config, msg] of invalid) {
    it(`refuses ${what} with code 7, naming the field and the value`, async () => {
      assert.deepEqual(cniError(await runStraitIpam(env, config)), { cniVersion: '1.0.0', code: 7, msg });
    });
  }

  it('refuses a cniVersion that is not a string with code 7', async () => {
    assert.deepEqual(cniError(await runStraitIpam(env, network({}, { cniVersion: 1 }))), {
      cniVersion: '1.1.0',
      code: 7,
      msg: 'cniVersion: must be a string (got 1)',
    });
  });

  // Spec code 2: "Unsupported field in network configuration", with the key and the value.
  it('refuses a key of the ipam object it does not know with code 2, naming the key, its value and the known keys', async () => {
    assert.deepEqual(cniError(await runStraitIpam(env, network({ default_ippool: ['a'] }))), {
      cniVersion: '1.0.0',
      code: 2,
      msg: 'ipam.default_ippool: unsupported field (got ["a"]); strait-ipam knows type, socket, default_ipv4_ippool, default_ipv6_ippool, detect_ip_conflict, detect_gateway',
    });
  });

  // Issue 24: "constructor" and "toString" passed, "__proto__" and "valueOf" failed with code 5 ("check is not a function").
  for (const key of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf']) {
    it(`refuses an ipam key named like a prototype member (${key}) with code 2, as any unknown key`, async () => {
      // As text: an object literal's __proto__ would set the prototype, not a key.
      const config = JSON.stringify(network({})).replace('"ipam":{', `"ipam":{"${key}":true,`);
      assert.deepEqual(cniError(await runStraitIpam(env, config)), {
        cniVersion: '1.0.0',
        code: 2,
        msg: `ipam.${key}: unsupported field (got true); strait-ipam knows type, socket, default_ipv4_ippool, default_ipv6_ippool, detect_ip_conflict, detect_gateway`,
      });
    });
  }

  // In its own words: V8's parser messages ("Unexpected token") read as a crash, and quote the input whole.
  it('refuses a configuration that is not a JSON object with code 6, saying where it breaks', async () => {
    const refusals: [string, string][] = [
      [
        '{"cniVersion":',
        'stdin: the network configuration is not JSON: cut short: it ends inside a value, after 14 characters (got "{\\"cniVersion\\":")',
      ],
      ['cniVersion=1.0.0', 'stdin: the network configuration is not JSON: "c" where no JSON value can have it (got "cniVersion=1.0.0")'],
      ['', 'stdin: the network configuration is not JSON: empty (got "")'],
      ['[1]', 'stdin: the network configuration must be a JSON object (got [1])'],
    ];
    for (const [stdin, msg] of refusals) assert.deepEqual(cniError(await runStraitIpam(env, stdin)), { cniVersion: '1.1.0', code: 6, msg });
  });

  // A value quoted whole in a message: 100,000 nested lists overflowed JSON.stringify's stack (code 5), 10 kB of text made a 10 kB message.
  it('quotes a value too deep to print, or too long, in a line', async () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    assert.deepEqual(
      cniError(await runStraitIpam(env, JSON.stringify(network({})).replace('"ipam":{', `"ipam":{"detect_gateway":${deep},`))),
      {
        cniVersion: '1.0.0',
        code: 7,
        msg: 'ipam.detect_gateway: must be true or false (got a value nested too deep to print)',
      },
    );
    assert.deepEqual(cniError(await runStraitIpam(env, network({ default_ipv4_ippool: ['x'.repeat(10_000)] }))), {
      cniVersion: '1.0.0',
      code: 7,
      msg: `ipam.default_ipv4_ippool[0]: must be a pool name (a DNS-1123 subdomain) (got "${'x'.repeat(199)}... (10002 characters))`,
    });
  });
});

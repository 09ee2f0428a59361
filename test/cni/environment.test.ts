import assert from 'node:assert/strict';
import { cniError, runStraitIpam } from './plugin-process';

// No service runs: an environment the plugin let through would end in code 11, not 4.
const network = {
  cniVersion: '1.0.0',
  name: 'underlay',
  type: 'macvlan',
  ipam: { type: 'strait-ipam', socket: '/nonexistent/strait-test/ipam.sock' },
};
const add = {
  CNI_COMMAND: 'ADD',
  CNI_CONTAINERID: 'c1',
  CNI_NETNS: '/var/run/netns/pod',
  CNI_IFNAME: 'net1',
  CNI_ARGS: 'K8S_POD_NAMESPACE=web;K8S_POD_NAME=web-0',
};
const without = (env: Record<string, string>, ...names: string[]) =>
  Object.fromEntries(Object.entries(env).filter(([name]) => !names.includes(name)));

const invalid: [string, Record<string, string>, string][] = [
  ['ADD without CNI_NETNS', without(add, 'CNI_NETNS'), 'missing CNI_NETNS (required for ADD)'],
  [
    'DEL without CNI_CONTAINERID and CNI_IFNAME',
    { ...without(add, 'CNI_CONTAINERID', 'CNI_IFNAME'), CNI_COMMAND: 'DEL' },
    'missing CNI_CONTAINERID, CNI_IFNAME (required for DEL)',
  ],
  [
    'CHECK without K8S_POD_NAME in CNI_ARGS',
    { ...add, CNI_COMMAND: 'CHECK', CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=web' },
    'CNI_ARGS: missing K8S_POD_NAME (required for CHECK; got "IgnoreUnknown=1;K8S_POD_NAMESPACE=web")',
  ],
  ['ADD without CNI_ARGS', without(add, 'CNI_ARGS'), 'CNI_ARGS: missing K8S_POD_NAMESPACE, K8S_POD_NAME (required for ADD; got "")'],
  [
    'CNI_ARGS that are not KEY=VALUE pairs',
    { ...add, CNI_ARGS: 'K8S_POD_NAMESPACE;K8S_POD_NAME=web-0' },
    'CNI_ARGS: "K8S_POD_NAMESPACE" is not KEY=VALUE (got "K8S_POD_NAMESPACE;K8S_POD_NAME=web-0")',
  ],
  [
    'an interface name longer than Linux allows',
    { ...add, CNI_IFNAME: 'net0123456789abc' },
    'CNI_IFNAME: an interface name is 1-15 bytes, not "." or "..", without "/", ":" or white space (got "net0123456789abc")',
  ],
  [
    'a container id with a "/"',
    { ...add, CNI_CONTAINERID: 'c1/../c2' },
    'CNI_CONTAINERID: letters, digits, "_", "." and "-", starting with a letter or digit (got "c1/../c2")',
  ],
  ['a relative CNI_NETNS', { ...add, CNI_NETNS: 'netns/pod' }, 'CNI_NETNS: must be an absolute path (got "netns/pod")'],
  // The service reads the pod by these names: a name no API server can hold is the runtime's error, not a failed lookup.
  [
    'a K8S_POD_NAME that is no pod name',
    { ...add, CNI_ARGS: 'K8S_POD_NAMESPACE=web;K8S_POD_NAME=Web_0' },
    'CNI_ARGS: K8S_POD_NAME must be a pod name (a DNS-1123 subdomain) (got "Web_0")',
  ],
  [
    'a K8S_POD_NAMESPACE with a path in it',
    { ...add, CNI_ARGS: 'K8S_POD_NAMESPACE=../..;K8S_POD_NAME=web-0' },
    'CNI_ARGS: K8S_POD_NAMESPACE must be a namespace name (a DNS-1123 label) (got "../..")',
  ],
];

describe('strait-ipam environment', () => {
  for (const [what, env, msg] of invalid) {
    it(`refuses ${what} with code 4, naming the variable`, async () => {
      assert.deepEqual(cniError(await runStraitIpam(env, network)), { cniVersion: '1.0.0', code: 4, msg });
    });
  }

  // Before the configuration is read, so the error is in the plugin's own version.
  it('refuses a missing or unknown CNI_COMMAND with code 4', async () => {
    assert.deepEqual(cniError(await runStraitIpam(without(add, 'CNI_COMMAND'), network)), {
      cniVersion: '1.1.0',
      code: 4,
      msg: 'CNI_COMMAND: missing',
    });
    assert.deepEqual(cniError(await runStraitIpam({ ...add, CNI_COMMAND: 'UPDATE' }, network)), {
      cniVersion: '1.1.0',
      code: 4,
      msg: 'CNI_COMMAND: not one of ADD, DEL, CHECK, VERSION, STATUS, GC (got "UPDATE")',
    });
  });
});

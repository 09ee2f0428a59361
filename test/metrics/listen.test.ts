import assert from 'node:assert/strict';
import { type AgentFlags, parseAgentFlags } from '../../src/cli/agent-command';
import { controllerMetricsListen } from '../../src/cli/controller-command';
import { InputError } from '../../src/errors';

const agentFlags = (over: Partial<AgentFlags> = {}): AgentFlags => ({
  spec: '/run/strait/lab/a/nodes/n1.json',
  pinRoot: '/sys/fs/bpf/strait/n1',
  podInterfaces: '^p-',
  dataplane: 'auto',
  attach: 'auto',
  interval: '1',
  resyncInterval: '60',
  probeInterval: '0.05',
  probeMultiplier: '3',
  ...over,
});
const agentListen = (over: Partial<AgentFlags>, env: { HOST_IP?: string } = {}) => parseAgentFlags(agentFlags(over), env).metrics;
const controllerListen = (over: { metricsAddress?: string; metricsPort?: string; once?: boolean }, env: { HOST_IP?: string } = {}) =>
  controllerMetricsListen({ config: '/etc/strait/a.yaml', ...over }, env);

function rejects(parse: () => unknown, field: string, value: string): void {
  assert.throws(parse, (err: unknown) => {
    assert.ok(err instanceof InputError, String(err));
    assert.deepEqual({ field: err.field, value: err.value }, { field, value });
    return true;
  });
}

describe('--metrics-address and --metrics-port', () => {
  it('listen on 127.0.0.1, port 9972 for the agent and 9973 for the controller, by default', () => {
    assert.deepEqual(agentListen({}), { address: '127.0.0.1', port: 9972, addressFrom: 'default' });
    assert.deepEqual(controllerListen({}), { address: '127.0.0.1', port: 9973, addressFrom: 'default' });
  });

  it('listen on HOST_IP when it is set (a DaemonSet sets it from status.hostIP), and on the flag over both', () => {
    assert.deepEqual(agentListen({}, { HOST_IP: '192.0.2.7' }), { address: '192.0.2.7', port: 9972, addressFrom: 'HOST_IP' });
    assert.deepEqual(controllerListen({}, { HOST_IP: '2001:db8::7' }), { address: '2001:db8::7', port: 9973, addressFrom: 'HOST_IP' });
    assert.deepEqual(agentListen({ metricsAddress: '0.0.0.0', metricsPort: '9100' }, { HOST_IP: '192.0.2.7' }), {
      address: '0.0.0.0',
      port: 9100,
      addressFrom: '--metrics-address',
    });
    assert.deepEqual(
      agentListen({}, { HOST_IP: '' }),
      { address: '127.0.0.1', port: 9972, addressFrom: 'default' },
      'an empty HOST_IP is no address',
    );
  });

  it("mean no server with port 0, for --cleanup and for the controller's --once", () => {
    assert.equal(agentListen({ metricsPort: '0' }), undefined);
    assert.equal(controllerListen({ metricsPort: '0' }), undefined);
    assert.equal(agentListen({ spec: undefined, cleanup: true }), undefined);
    assert.equal(controllerListen({ once: true }), undefined);
  });

  it('refuse a bad port or address, naming the flag (or HOST_IP) and the value', () => {
    for (const listen of [agentListen, controllerListen]) {
      for (const port of ['65536', '-1', '99x', '', '1e3', ' 80']) rejects(() => listen({ metricsPort: port }), '--metrics-port', port);
      for (const address of ['localhost', '10.0.0.256', '', '10.0.0.1:9972', '::g'])
        rejects(() => listen({ metricsAddress: address }), '--metrics-address', address);
      rejects(() => listen({}, { HOST_IP: 'node-1.example' }), 'HOST_IP', 'node-1.example');
    }
  });
});

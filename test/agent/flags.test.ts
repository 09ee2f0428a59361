import assert from 'node:assert/strict';
import { type AgentFlags, parseAgentFlags } from '../../src/cli/agent-command';
import { InputError } from '../../src/errors';

const flags = (over: Partial<AgentFlags> = {}): AgentFlags => ({
  spec: '/run/strait/lab/a/nodes/n1.json', pinRoot: '/sys/fs/bpf/strait/n1', podInterfaces: '^p-', dataplane: 'auto', attach: 'auto', interval: '1', ...over,
});

function rejects(over: Partial<AgentFlags>, flag: string, value: unknown): void {
  assert.throws(() => parseAgentFlags(flags(over)), (err: unknown) => err instanceof InputError && err.field === flag && err.value === value);
}

describe('strait agent flags', () => {
  it('takes the defaults of docs/lab.md', () => {
    assert.deepEqual(parseAgentFlags(flags()), {
      cleanup: false, specPath: '/run/strait/lab/a/nodes/n1.json', pinRoot: '/sys/fs/bpf/strait/n1', podInterfaces: /^p-/, dataplane: 'auto', attachMode: 'auto', intervalMs: 1000,
    });
    const all = parseAgentFlags(flags({ status: '/s.json', node: 'n1', interval: '0.2', dataplane: 'ebpf', attach: 'clsact', podInterfaces: '^(p|veth)-' }));
    assert.equal(all.intervalMs, 200);
    assert.equal(all.statusPath, '/s.json');
    assert.equal(all.nodeName, 'n1');
    assert.equal(all.attachMode, 'clsact');
    assert.ok(all.podInterfaces.test('veth-1') && !all.podInterfaces.test('eth0'));
  });

  it('needs --spec except for --cleanup', () => {
    rejects({ spec: undefined }, '--spec', undefined);
    assert.equal(parseAgentFlags(flags({ spec: undefined, cleanup: true })).cleanup, true);
    assert.equal(parseAgentFlags(flags({ spec: undefined, config: '/etc/strait/n1.json' })).specPath, '/etc/strait/n1.json', '--config is the same file');
    rejects({ config: '/etc/strait/n1.json' }, '--config', '/etc/strait/n1.json');
  });

  it('refuses every bad flag, naming it and its value', () => {
    rejects({ podInterfaces: '^p-(' }, '--pod-interfaces', '^p-(');
    rejects({ interval: '0' }, '--interval', '0');
    rejects({ interval: '-1' }, '--interval', '-1');
    rejects({ interval: '1s' }, '--interval', '1s');
    rejects({ interval: '' }, '--interval', '');
    rejects({ dataplane: 'xdp' }, '--dataplane', 'xdp');
    rejects({ attach: 'xdp' }, '--attach', 'xdp');
    rejects({ pinRoot: 'pins/n1' }, '--pin-root', 'pins/n1');
    rejects({ netns: 'strait-no-such-namespace' }, '--netns', 'strait-no-such-namespace');
    rejects({ netns: '../etc' }, '--netns', '../etc');
    rejects({ node: '' }, '--node', '');
  });
});

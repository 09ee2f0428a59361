/**
 * The lab's service proxy, as kube-proxy's nftables mode on every node of a cluster: each imported
 * service's ClusterSetIPs and ports DNATed to one of its ready endpoints at random (`numgen random`), a
 * port with none rejected (as kube-proxy does). It reads the imports the cluster's controller writes
 * (`<cluster>/imports/*.json`, docs/services.md) every 100 ms and replaces its table in each node's
 * namespace, in one nft transaction, when the rules change. The DNAT happens in the node's stack after
 * Strait's pod program let the packet pass, as on a real node: what the datapath must then carry
 * (docs/datapath.md, the overlay device's egress).
 *
 * Run as `node service-proxy.js RUN_DIR CLUSTER NODE...` (the lab starts one per cluster that imports).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { checkCompiled } from '../../src/api/compiled-validators';
import { runDirPaths } from '../../src/api/run-dir';
import type { ServiceImportDocument } from '../../src/api/service-import-schema';
import { nft } from '../../src/kernel/command';
import { nodeNetns } from './names';

const proxyTable = 'strait-lab-proxy';

type Family = 'ip' | 'ip6';
const familyOf = (address: string): Family => (address.includes(':') ? 'ip6' : 'ip');
/** kube-proxy's mark for masquerade: a pod reaching itself through a service (hairpin) must see the reply come back through the node. */
const masqueradeMark = '0x4000';

/** The chains of one ClusterSetIP and port: a jump from prerouting, a random pick, an endpoint chain each. */
function portChains(
  service: ServiceImportDocument,
  ip: string,
  port: ServiceImportDocument['ports'][number],
  id: string,
): { rule: string; chains: string[] } {
  const family = familyOf(ip);
  const targets = service.endpointSlices
    .filter((s) => (s.addressType === 'IPv6') === (family === 'ip6'))
    .flatMap((s) => {
      // kube-proxy's match: the slice's port of the service port's name.
      const target = s.ports.find((p) => (p.name ?? '') === (port.name ?? '') && p.protocol === port.protocol);
      return target ? s.endpoints.filter((e) => e.ready).map((e) => ({ address: e.address, port: target.port })) : [];
    })
    .sort((a, b) => (a.address < b.address ? -1 : 1));
  const protocol = port.protocol.toLowerCase();
  const match = `${family} daddr ${ip} ${protocol} dport ${port.port}`;
  if (targets.length === 0) return { rule: `${match} reject`, chains: [] };
  const endpointChains = targets.map((t, i) => {
    const to = family === 'ip6' ? `[${t.address}]:${t.port}` : `${t.address}:${t.port}`;
    return `  chain ${id}-${i} {\n    ${family} saddr ${t.address} meta mark set meta mark | ${masqueradeMark}\n    meta l4proto ${protocol} dnat ${family} to ${to}\n  }`;
  });
  const pick = targets.map((_, i) => `${i} : goto ${id}-${i}`).join(', ');
  return {
    rule: `${match} goto ${id}`,
    chains: [`  chain ${id} {\n    numgen random mod ${targets.length} vmap { ${pick} }\n  }`, ...endpointChains],
  };
}

/** The proxy's whole table for these imports (pure): kube-proxy's nftables shape, in a stable order. */
export function serviceProxyRules(imports: readonly ServiceImportDocument[]): string {
  const ports = imports
    .filter((s) => s.type === 'ClusterSetIP')
    .flatMap((s) => s.ips.flatMap((ip) => s.ports.map((p) => ({ s, ip, p }))))
    .map(({ s, ip, p }, i) => portChains(s, ip, p, `svc-${i}`));
  return [
    `table inet ${proxyTable} {`,
    '  chain prerouting {',
    '    type nat hook prerouting priority dstnat; policy accept;',
    ...ports.map((p) => `    ${p.rule}`),
    '  }',
    '  chain postrouting {',
    '    type nat hook postrouting priority srcnat; policy accept;',
    `    meta mark & ${masqueradeMark} == ${masqueradeMark} masquerade`,
    '  }',
    ...ports.flatMap((p) => p.chains),
    '}',
  ].join('\n');
}

/** The cluster's imports as its controller last wrote them; a file being replaced or unreadable is skipped this round. */
export function readImports(runDir: string, cluster: string): ServiceImportDocument[] {
  const dir = join(runDir, runDirPaths.serviceImports(cluster));
  let files: string[] = [];
  try {
    files = readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort();
  } catch {
    return [];
  }
  return files.flatMap((f) => {
    try {
      return [checkCompiled('serviceImport', JSON.parse(readFileSync(join(dir, f), 'utf8')))];
    } catch {
      return [];
    }
  });
}

/** Replaces the proxy's table in a node's namespace, atomically (one transaction). */
const applyProxyRules = (rules: string, netns: string) =>
  nft(`table inet ${proxyTable}\ndelete table inet ${proxyTable}\n${rules}\n`, netns);

async function main(): Promise<void> {
  const [runDir, cluster, ...nodes] = process.argv.slice(2);
  if (!runDir || !cluster || nodes.length === 0) {
    process.stderr.write('usage: service-proxy RUN_DIR CLUSTER NODE...\n');
    process.exit(2);
  }
  let applied = '';
  for (;;) {
    const rules = serviceProxyRules(readImports(runDir, cluster));
    if (rules !== applied) {
      try {
        for (const node of nodes) applyProxyRules(rules, nodeNetns(node));
        applied = rules;
        process.stdout.write(
          `${JSON.stringify({ time: new Date().toISOString(), msg: 'rules applied', lines: rules.split('\n').length })}\n`,
        );
      } catch (err) {
        process.stdout.write(
          `${JSON.stringify({ time: new Date().toISOString(), msg: 'rules not applied', err: (err as Error).message })}\n`,
        );
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

if (require.main === module) void main();

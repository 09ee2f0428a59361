/**
 * The human-readable form of an inspect report: one titled section per table, columns aligned with
 * spaces (numbers to the right) so it reads in a terminal and survives grep and copy-paste.
 */
import { type InspectReport, type InspectSection, type SnatFlowReport, counterFamilies } from './inspect';

type Cell = string | number;

function table(headers: readonly string[], rows: readonly (readonly Cell[])[]): string[] {
  if (rows.length === 0) return ['  (none)'];
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const numeric = headers.map((_, i) => rows.every((r) => typeof r[i] === 'number'));
  const line = (cells: readonly Cell[]) =>
    `  ${cells.map((c, i) => (numeric[i] ? String(c).padStart(widths[i]!) : String(c).padEnd(widths[i]!))).join('  ')}`.trimEnd();
  return [line(headers), ...rows.map(line)];
}

const endpoint = (addr: string, port: number) => `${addr}:${port}`;

function snatRewrite(f: SnatFlowReport): string {
  const to = endpoint(f.to.addr, f.to.port);
  if (f.direction === 'forward') return `src -> ${to}`;
  if (f.direction === 'reply') return `dst -> ${to}`;
  return to;
}

const formatters: Record<InspectSection, (r: InspectReport) => string[]> = {
  config: (r) => {
    if (r.config === null) return ['config', '  (empty: the agent has not programmed this node yet)'];
    const c = r.config;
    return [
      'config',
      ...table(
        ['FIELD', 'VALUE'],
        [
          ['role', c.role],
          // A node without IPv4: its IPv4 networks are absent ('-'), not 0.0.0.0.
          ['pod CIDR', c.podCIDR ?? '-'],
          ['external CIDR', c.externalCIDR ?? '-'],
          ['node address', c.nodeAddress],
          ['active gateway', c.activeGatewayAddress],
          ['transit address', c.transitAddress ?? '-'],
          ['overlay', `ifindex ${c.overlayIfindex}, vni ${c.overlayVni}, mac ${c.overlayMac}`],
          ['tunnel MTU', String(c.tunnelMtu)],
          ...(c.ipv6
            ? [
                ['IPv6 pod CIDR', c.ipv6.podCIDR],
                ['IPv6 external CIDR', c.ipv6.externalCIDR],
                ['IPv6 transit address', c.ipv6.transitAddress],
              ]
            : []),
        ],
      ),
    ];
  },
  peers: (r) => {
    const lines = [
      `peers (${r.peers.length})`,
      ...table(
        ['PEER', 'REMOTE POD', 'REMOTE EXTERNAL', 'LOCAL NAT POD', 'LOCAL NAT EXTERNAL', 'ENDPOINT', 'VNI', 'SRC MAC', 'DST MAC'],
        r.peers.map((p) => [
          p.peerId,
          p.remotePodCIDRs.join(',') || '-',
          p.remoteExternalCIDRs.join(',') || '-',
          [p.localNATPodCIDR, p.ipv6?.localNATPodCIDR].filter(Boolean).join(',') || '-',
          [p.localNATExternalCIDR, p.ipv6?.localNATExternalCIDR].filter(Boolean).join(',') || '-',
          p.endpoint,
          p.vni,
          p.srcMac,
          p.dstMac,
        ]),
      ),
      '',
      // Apart, a row per family: a column per family and figure would make the peers' rows far wider.
      'peer counters',
      ...table(
        ['PEER', 'FAMILY', 'TX PKTS', 'TX BYTES', 'RX PKTS', 'RX BYTES'],
        r.peers.flatMap((p) =>
          counterFamilies.map((family) => {
            const c = p.counters[family];
            return [p.peerId, family, c.txPackets, c.txBytes, c.rxPackets, c.rxBytes];
          }),
        ),
      ),
    ];
    // Shown only when there are some: an unusable route is a fault to notice, not a routine row.
    if (r.strayRoutes.length > 0)
      lines.push(
        '',
        `stray routes (${r.strayRoutes.length})`,
        ...table(
          ['PREFIX', 'PEER', 'KIND', 'PROBLEM'],
          r.strayRoutes.map((s) => [s.prefix, s.peerId, s.kind, s.problem]),
        ),
      );
    return lines;
  },
  nat: (r) => {
    const lines = [
      `nat mappings (${r.natMappings.length})`,
      ...table(
        ['EXTERNAL', 'ENDPOINT', 'REVERSE'],
        r.natMappings.map((n) => [n.externalAddress, n.endpointAddress, n.problem ?? 'ok']),
      ),
    ];
    if (r.strayReverseMappings.length > 0) {
      lines.push(
        '',
        `stray reverse mappings (${r.strayReverseMappings.length})`,
        ...table(
          ['ENDPOINT', 'EXTERNAL', 'PROBLEM'],
          r.strayReverseMappings.map((s) => [s.endpointAddress, s.externalAddress, s.problem]),
        ),
      );
    }
    return lines;
  },
  nodes: (r) => [
    `nodes (${r.nodes.length})`,
    ...table(
      ['PREFIX', 'UNDERLAY'],
      r.nodes.map((n) => [n.prefix, n.underlay]),
    ),
  ],
  snat: (r) => [
    `transit snat (${r.snat.total}${r.snat.flows.length < r.snat.total ? `, first ${r.snat.flows.length} shown: raise --limit for more` : ''})`,
    ...table(
      ['DIRECTION', 'PROTO', 'SOURCE', 'DESTINATION', 'REWRITE'],
      r.snat.flows.map((f) => [f.direction, f.proto, endpoint(f.src, f.sport), endpoint(f.dst, f.dport), snatRewrite(f)]),
    ),
  ],
  drops: (r) => ['drops', ...table(['REASON', 'PACKETS'], Object.entries(r.drops))],
};

/** The pin root, then the sections of `report` in the order given, separated by blank lines. */
export function formatInspectReport(report: InspectReport, sections: readonly InspectSection[]): string {
  return `pin root ${report.pinRoot}\n\n${sections.map((s) => formatters[s](report).join('\n')).join('\n\n')}\n`;
}

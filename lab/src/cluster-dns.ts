/**
 * The lab's clusterset DNS: what CoreDNS's `multicluster` plugin answers on a real cluster (docs/services.md,
 * "Names"), from the imports the cluster's controller writes. Debian has no CoreDNS, so the lab runs this
 * on every node (`dns-<node>`, UDP port 53), and each pod's /etc/resolv.conf (`ip netns exec` mounts
 * /etc/netns/<pod>/resolv.conf) names its node. KEP-1645's names:
 *   <service>.<namespace>.svc.clusterset.local              A/AAAA: the ClusterSetIPs (Headless: every ready endpoint)
 *   <hostname>.<cluster>.<service>.<namespace>.svc.clusterset.local   A/AAAA: that endpoint of a Headless service
 * A name under clusterset.local that is none of these is NXDOMAIN; one without a record of the type asked,
 * no answer (NODATA); any other name is REFUSED (the lab has no upstream to forward to).
 *
 * Run as `node cluster-dns.js RUN_DIR CLUSTER` in the node's namespace.
 */
import { createSocket } from 'node:dgram';
import dnsPacket from 'dns-packet';
import type { ServiceImportDocument } from '../../src/api/service-import-schema';
import { readImports } from './service-proxy';

const zone = 'svc.clusterset.local';
/** Seconds: imports change as endpoints do. */
const ttl = 5;
const rcode = { noError: 0, nxDomain: 3, refused: 5 } as const;

export interface DnsAnswer {
  rcode: (typeof rcode)[keyof typeof rcode];
  addresses: string[];
}

const familyOf = (type: string) => (type === 'AAAA' ? 'IPv6' : type === 'A' ? 'IPv4' : undefined);

/** The answer to a question about `name` of `type` (pure). */
export function answerQuestion(imports: readonly ServiceImportDocument[], name: string, type: string): DnsAnswer {
  const labels = name.toLowerCase().replace(/\.$/, '').split('.');
  const suffix = zone.split('.');
  if (labels.length < suffix.length + 2 || labels.slice(-suffix.length).join('.') !== zone) return { rcode: rcode.refused, addresses: [] };
  const [service, namespace] = labels.slice(-suffix.length - 2);
  const imported = imports.find((i) => i.name === service && i.namespace === namespace);
  const family = familyOf(type);
  /** The ready endpoints of the family asked, of the slices `slice` keeps, that `endpoint` keeps. */
  const addresses = (
    slice: (s: ServiceImportDocument['endpointSlices'][number]) => boolean,
    endpoint: (e: ServiceImportDocument['endpointSlices'][number]['endpoints'][number]) => boolean = () => true,
  ) =>
    imported!.endpointSlices
      .filter((s) => s.addressType === family && slice(s))
      .flatMap((s) => s.endpoints.filter((e) => e.ready && endpoint(e)).map((e) => e.address));
  const prefix = labels.slice(0, -suffix.length - 2);
  if (!imported || prefix.length === 1 || prefix.length > 2) return { rcode: rcode.nxDomain, addresses: [] };
  if (prefix.length === 2) {
    // <hostname>.<cluster>: one endpoint of a Headless service.
    const [hostname, cluster] = prefix as [string, string];
    const named = imported.endpointSlices.some((s) => s.cluster === cluster && s.endpoints.some((e) => e.hostname === hostname));
    if (imported.type !== 'Headless' || !named) return { rcode: rcode.nxDomain, addresses: [] };
    return {
      rcode: rcode.noError,
      addresses: family
        ? addresses(
            (s) => s.cluster === cluster,
            (e) => e.hostname === hostname,
          )
        : [],
    };
  }
  if (!family) return { rcode: rcode.noError, addresses: [] };
  if (imported.type === 'Headless') return { rcode: rcode.noError, addresses: addresses(() => true) };
  return { rcode: rcode.noError, addresses: imported.ips.filter((ip) => (family === 'IPv6') === ip.includes(':')) };
}

/** The response to one query packet, or undefined for what is no query. */
export function respond(imports: readonly ServiceImportDocument[], query: Buffer): Buffer | undefined {
  let packet: dnsPacket.DecodedPacket;
  try {
    packet = dnsPacket.decode(query);
  } catch {
    return undefined;
  }
  const question = packet.questions?.[0];
  if (packet.type !== 'query' || !question) return undefined;
  const answer = answerQuestion(imports, question.name, question.type);
  return dnsPacket.encode({
    type: 'response',
    id: packet.id ?? 0,
    flags: dnsPacket.AUTHORITATIVE_ANSWER | answer.rcode,
    questions: [question],
    answers: answer.addresses.map((data) => ({ type: question.type as 'A' | 'AAAA', name: question.name, ttl, data })),
  });
}

function main(): void {
  const [runDir, cluster] = process.argv.slice(2);
  if (!runDir || !cluster) {
    process.stderr.write('usage: cluster-dns RUN_DIR CLUSTER\n');
    process.exit(2);
  }
  let imports: ServiceImportDocument[] = [];
  const refresh = () => (imports = readImports(runDir, cluster));
  refresh();
  setInterval(refresh, 100);
  for (const [type, address] of [
    ['udp4', '0.0.0.0'],
    ['udp6', '::'],
  ] as const) {
    const socket = createSocket({ type, ipv6Only: type === 'udp6' });
    socket.on('message', (query, from) => {
      const response = respond(imports, query);
      if (response) socket.send(response, from.port, from.address);
    });
    // A node without an address of the family serves the other.
    socket.on('error', () => socket.close());
    socket.bind(53, address);
  }
}

if (require.main === module) main();

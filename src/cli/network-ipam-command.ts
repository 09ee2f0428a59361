/**
 * `strait network-ipam ...`: the IPAM on a state file, one operation per run. A thin shell: parse options, run
 * one pure IPAM operation inside a FileStore transaction, print JSON. A refused operation saves nothing.
 */
import type { Command } from 'commander';
import { InputError, StateError } from '../errors';
import { formatCidr, parseCidr, parseIp } from '../net/cidr';
import { mapEndpoint, natMappingsOf, unmapEndpoint } from '../network-ipam/endpoints';
import { type FamilyNetworksSpec, type HomeNetworks, defaultPools, homeNetworksSpec } from '../api/home-networks';
import { addPeer, findPeer, homePodIp, peerView, removePeer, setRemoteView } from '../network-ipam/peers';
import type { IpamState, Outcome, PeerRecord } from '../network-ipam/state';
import { type IpamPlanes, type PlaneName, initializePlanes, planesOf, withPlane } from '../network-ipam/planes';
import { ipamStateCodec, toDocument } from '../network-ipam/state-document';
import { FileStore } from '../store/file-store';
import { transact } from '../store/store';
import { jsonAction } from './output';

/** --state: a path the file system can take, of a file (a directory is not a state). */
function statePath(text: string): string {
  if (text === '') throw new InputError('--state', text, 'must name a file');
  if (text.includes('\0')) throw new InputError('--state', text, 'must not contain a NUL character');
  if (text.endsWith('/')) throw new InputError('--state', text, 'must name a file, not a directory (it ends with /)');
  return text;
}

function storeAt(path: string): FileStore<IpamPlanes> {
  return new FileStore(path, ipamStateCodec);
}

function required(path: string, state: IpamPlanes | undefined): IpamPlanes {
  if (!state) throw new InputError('--state', path, `no IPAM state there; create it with \`strait network-ipam init --state ${path} ...\``);
  return state;
}

/** An operation on the state of `path`; what it refuses because of that state names the file (an operator may keep several). */
function onState<R>(path: string, operation: () => R): R {
  try {
    return operation();
  } catch (err) {
    if (err instanceof StateError) throw new StateError(`${path}: ${err.message}`);
    throw err;
  }
}

/** Runs one operation on the saved state under the writer lock; saves only if the state changed. */
function change<R>(path: string, operation: (planes: IpamPlanes) => Outcome<R, IpamPlanes>): Promise<R> {
  return transact(storeAt(path), (current) => onState(path, () => operation(required(path, current))));
}

/** Runs one operation on the saved state, without the lock: a reader always sees a whole file. */
async function read<R>(path: string, operation: (planes: IpamPlanes) => R): Promise<R> {
  const planes = required(path, await storeAt(path).load());
  return onState(path, () => operation(planes));
}

/** The plane of the family of `text` (an address or network the operation takes), named by its option. */
function planeFor(planes: IpamPlanes, option: string, text: string): [PlaneName, IpamState] {
  const { family } = text.includes('/') ? parseCidr(option, text) : parseIp(option, text);
  const found = planesOf(planes).find(([, plane]) => plane.home.podCIDR.family === family);
  if (!found)
    throw new InputError(option, text, `is IPv${family}, a family this cluster has no networks of (init --secondary-pod-cidr adds one)`);
  return found;
}

/** One single-family operation on the plane of `text`'s family. */
function onPlane<R>(planes: IpamPlanes, option: string, text: string, operation: (state: IpamState) => Outcome<R>): Outcome<R, IpamPlanes> {
  const [name, plane] = planeFor(planes, option, text);
  const { state, result } = operation(plane);
  return { state: withPlane(planes, name, state), result };
}

/** The secondary family's networks from init's options: both or none of the two required ones. */
function secondaryNetworks(o: { secondaryPodCidr?: string; secondaryExternalCidr?: string; secondaryServiceCidr?: string }) {
  const { secondaryPodCidr: podCIDR, secondaryExternalCidr: externalCIDR, secondaryServiceCidr: serviceCIDR } = o;
  if (podCIDR === undefined && externalCIDR === undefined) {
    if (serviceCIDR !== undefined)
      throw new InputError('--secondary-service-cidr', serviceCIDR, 'needs --secondary-pod-cidr and --secondary-external-cidr');
    return undefined;
  }
  if (podCIDR === undefined) throw new InputError('--secondary-pod-cidr', undefined, 'is required with --secondary-external-cidr');
  if (externalCIDR === undefined) throw new InputError('--secondary-external-cidr', undefined, 'is required with --secondary-pod-cidr');
  return { podCIDR, externalCIDR, ...(serviceCIDR !== undefined ? { serviceCIDR } : {}) };
}

/** A plane's own networks as text. */
function familyNetworksSpec(home: HomeNetworks): FamilyNetworksSpec {
  const { podCIDR, externalCIDR, serviceCIDR } = homeNetworksSpec(home);
  return { podCIDR, externalCIDR, ...(serviceCIDR !== undefined ? { serviceCIDR } : {}) };
}

function list(text: string): string[] {
  return text
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
}

interface StateOption {
  state: string;
}
interface ClusterOption extends StateOption {
  cluster: string;
}
interface IpOption extends ClusterOption {
  ip: string;
}

/** @public src/cli/main.ts loads it with require() when its command runs, which knip cannot follow. */
export function registerNetworkIpamCommands(program: Command): void {
  const ipam = program
    .command('network-ipam')
    .alias('ipam')
    .description(
      'IPAM of networks: peers kept or remapped, pod and endpoint address translation, NatMappings (state in a file, output JSON)',
    );
  const stateOption = [
    '--state <file>',
    'IPAM state file (written atomically; a lock file beside it admits one writer)',
    statePath,
  ] as const;

  ipam
    .command('init')
    .description(
      'create the state, or resume it: the same configuration changes nothing; a changed one is migrated when no peer or mapping is in the way, else refused with what to do',
    )
    .requiredOption(...stateOption)
    .requiredOption('--pod-cidr <cidr>', 'PodCIDR of this cluster')
    .requiredOption('--external-cidr <cidr>', 'ExternalCIDR of this cluster: addresses for reflected non-local endpoints')
    .option('--service-cidr <cidr>', 'ServiceCIDR of this cluster')
    .option('--secondary-pod-cidr <cidr>', "dual-stack: the PodCIDR of the secondary IP family (the other one than --pod-cidr's)")
    .option('--secondary-external-cidr <cidr>', 'dual-stack: the ExternalCIDR of the secondary IP family')
    .option('--secondary-service-cidr <cidr>', 'dual-stack: the ServiceCIDR of the secondary IP family')
    .option('--reserved <cidrs>', 'comma-separated networks never given to peers', '')
    .option('--pools <cidrs>', 'comma-separated pools for remapped peer networks, searched in order', defaultPools.join(','))
    .option('--force', 'start over: forget every peer and mapping (also replaces a state file that can no longer be loaded)')
    .action(
      jsonAction(
        (
          o: StateOption & {
            podCidr: string;
            externalCidr: string;
            serviceCidr?: string;
            secondaryPodCidr?: string;
            secondaryExternalCidr?: string;
            secondaryServiceCidr?: string;
            reserved: string;
            pools: string;
            force?: boolean;
          },
        ) =>
          transact(
            storeAt(o.state),
            (current) =>
              onState(o.state, () => {
                const secondary = secondaryNetworks(o);
                const spec = {
                  podCIDR: o.podCidr,
                  externalCIDR: o.externalCidr,
                  ...(o.serviceCidr !== undefined ? { serviceCIDR: o.serviceCidr } : {}),
                  ...(secondary ? { secondary } : {}),
                  reserved: list(o.reserved),
                  pools: list(o.pools),
                };
                const { planes, result } = initializePlanes(current, spec, o.force === true);
                const { primary, secondary: second } = planes;
                return {
                  state: planes,
                  result: {
                    ...result,
                    home: { ...homeNetworksSpec(primary.home), ...(second ? { secondary: familyNetworksSpec(second.home) } : {}) },
                    peers: primary.peers.size,
                    ...(second ? { secondaryPeers: second.peers.size } : {}),
                  },
                };
              }),
            { replace: o.force === true },
          ),
      ),
    );

  const peer = ipam.command('peer').description('peers: add or update, record how they see us, remove');
  peer
    .command('add')
    .description(
      'add or update a peer: its networks are kept when free, else remapped to the lowest free network of the same size; prints how we see them',
    )
    .requiredOption(...stateOption)
    .requiredOption('--cluster <id>', 'cluster id of the peer')
    .requiredOption('--pod-cidr <cidr>', "the peer's PodCIDR, as the peer numbers it")
    .requiredOption('--external-cidr <cidr>', "the peer's ExternalCIDR, as the peer numbers it")
    .action(
      jsonAction(async (o: ClusterOption & { podCidr: string; externalCidr: string }) => {
        const view = await change(o.state, (planes) =>
          onPlane(planes, 'podCIDR', o.podCidr, (state) =>
            addPeer(state, { clusterId: o.cluster, podCIDR: o.podCidr, externalCIDR: o.externalCidr }),
          ),
        );
        return { remotePodCIDR: view.remotePodCIDR, remoteExternalCIDR: view.remoteExternalCIDR };
      }),
    );
  peer
    .command('remote-view')
    .description('record how the peer sees our networks (the status it wrote on our NetworkConfig); needed before map-endpoint')
    .requiredOption(...stateOption)
    .requiredOption('--cluster <id>', 'cluster id of the peer')
    .requiredOption('--local-nat-pod-cidr <cidr>', 'our PodCIDR as the peer sees it (our own if it did not remap it)')
    .requiredOption('--local-nat-external-cidr <cidr>', 'our ExternalCIDR as the peer sees it')
    .action(
      jsonAction((o: ClusterOption & { localNatPodCidr: string; localNatExternalCidr: string }) =>
        change(o.state, (planes) =>
          onPlane(planes, 'localNATPodCIDR', o.localNatPodCidr, (state) =>
            setRemoteView(state, {
              clusterId: o.cluster,
              localNATPodCIDR: o.localNatPodCidr,
              localNATExternalCIDR: o.localNatExternalCidr,
            }),
          ),
        ),
      ),
    );
  peer
    .command('remove')
    .description(
      'remove a peer: its networks and the ExternalCIDR addresses reflected only to it are released ({"removed": false} if unknown)',
    )
    .requiredOption(...stateOption)
    .requiredOption('--cluster <id>', 'cluster id of the peer')
    .action(
      jsonAction((o: ClusterOption) =>
        change(o.state, (planes) => {
          // Every family's networks of the peer go.
          let removed = false;
          let state = planes;
          for (const [name, plane] of planesOf(planes)) {
            const outcome = removePeer(plane, o.cluster);
            removed ||= outcome.result.removed;
            state = withPlane(state, name, outcome.state);
          }
          return { state, result: { removed } };
        }),
      ),
    );

  ipam
    .command('home-pod-ip')
    .description("translate a pod IP assigned by a peer's CNI (in the peer's PodCIDR) into how this cluster sees it")
    .requiredOption(...stateOption)
    .requiredOption('--cluster <id>', 'cluster id of the peer running the pod')
    .requiredOption('--ip <ip>', "the pod's IP in the peer")
    .action(jsonAction((o: IpOption) => read(o.state, (planes) => ({ ip: homePodIp(planeFor(planes, 'ip', o.ip)[1], o.cluster, o.ip) }))));

  ipam
    .command('map-endpoint')
    .description(
      "the address under which a peer reaches an endpoint: a local pod is translated into the peer's view of our PodCIDR; " +
        "any other endpoint gets an ExternalCIDR address (lowest free, shared by every peer) in the peer's view of our ExternalCIDR, recorded as a NatMapping",
    )
    .requiredOption(...stateOption)
    .requiredOption('--cluster <id>', 'cluster id of the peer the endpoint is reflected to')
    .requiredOption('--ip <ip>', 'the endpoint IP as this cluster sees it')
    .action(
      jsonAction((o: IpOption) => change(o.state, (planes) => onPlane(planes, 'ip', o.ip, (state) => mapEndpoint(state, o.cluster, o.ip)))),
    );
  ipam
    .command('unmap-endpoint')
    .description('stop reflecting an endpoint to a peer; its ExternalCIDR address is freed with the last reflection (idempotent)')
    .requiredOption(...stateOption)
    .requiredOption('--cluster <id>', 'cluster id of the peer')
    .requiredOption('--ip <ip>', 'the endpoint IP as this cluster sees it')
    .action(
      jsonAction((o: IpOption) =>
        change(o.state, (planes) => onPlane(planes, 'ip', o.ip, (state) => unmapEndpoint(state, o.cluster, o.ip))),
      ),
    );

  ipam
    .command('nat-mappings')
    .description('the NatMappings toward a peer: ExternalCIDR address (ours) -> real endpoint address')
    .requiredOption(...stateOption)
    .requiredOption('--cluster <id>', 'cluster id of the peer')
    .action(
      jsonAction((o: ClusterOption) =>
        read(o.state, ({ primary, secondary }) => {
          const mappings = (state: IpamState, record: PeerRecord) => ({
            externalCIDR: formatCidr(state.home.externalCIDR),
            localNATExternalCIDR: peerView(record).localNATExternalCIDR,
            mappings: natMappingsOf(record, state.home.externalCIDR.family),
          });
          const record = findPeer(primary, o.cluster);
          const second = secondary?.peers.get(record.clusterId);
          return {
            clusterId: record.clusterId,
            ...mappings(primary, record),
            ...(secondary && second ? { secondary: mappings(secondary, second) } : {}),
          };
        }),
      ),
    );

  ipam
    .command('show')
    .description('print the whole state (the versioned document stored in the file), checked on load')
    .requiredOption(...stateOption)
    .action(jsonAction((o: StateOption) => read(o.state, toDocument)));
}

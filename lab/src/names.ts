/**
 * Names of the lab's namespaces and interfaces (one place, so `down` finds everything `up` made), and the
 * places of its state and topology unless told otherwise.
 */
import { join } from 'node:path';

export const labPrefix = 'sl-';
export const nodeNetns = (node: string) => `${labPrefix}${node}`;
export const podNetns = (pod: string) => `${labPrefix}${pod}`;
export const switchNetns = (cluster: string) => `${labPrefix}${cluster}-sw`;
export const publicNetns = `${labPrefix}pub`;
export const defaultRunDir = '/run/strait/lab';
export const defaultTopologyPath = join(__dirname, '..', '..', '..', 'lab', 'src', 'topologies', 'default.yaml');
export const labPinRoot = '/sys/fs/bpf/strait-lab';
export const echoPort = 7007;
/** A port nothing listens on in any pod: datagrams to it get an ICMP port unreachable. */
export const closedPort = 7008;
/** Each pod's name, to whoever connects (TCP): which endpoint of a service answered. */
export const whoamiPort = 7009;
/** The port of every lab service (its pods' `whoamiPort`). */
export const servicePort = 80;

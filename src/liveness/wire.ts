/**
 * A liveness probe on the wire (bpf/lib/common.h, struct strait_probe): a UDP datagram to a node's
 * underlay (or public) address on `livenessPort`, which the node's datapath turns around in place
 * (bpf/lib/liveness.h) with its state. Nothing but the responder answers it: a reply proves the
 * programs run there. test/liveness/wire.test.ts checks the layout against the object's BTF.
 */
import { be32, struct, u8 } from '../native';

/**
 * The UDP port of liveness probes, the same on every node of every cluster (a peer's gateways probe
 * ours). Not BFD's 3784/3785: nodes running a BGP speaker often run BFD too.
 */
export const livenessPort = 4796;

export const probeMagic = 0x5354524c; // "STRL"
export const probeVersion = 1;
export const ProbeType = { Request: 1, Reply: 2 } as const;
/** enum strait_probe_state. */
export enum ProbeState {
  /** The programs run, but the node's maps hold no spec it forwards by. */
  Down = 0,
  Ready = 1,
}

export const probe = struct({
  magic: be32,
  version: u8,
  type: u8,
  state: u8,
  _pad: u8,
  session: be32,
  seq: be32,
  generation: be32,
});

/** A request of `session` (the prober's id) numbered `seq`. */
export function probeRequest(session: number, seq: number): Buffer {
  const buf = Buffer.alloc(probe.size);
  probe.encode(
    { magic: probeMagic, version: probeVersion, type: ProbeType.Request, state: 0, _pad: 0, session, seq, generation: 0 },
    buf,
    0,
  );
  return buf;
}

export interface ProbeReply {
  session: number;
  seq: number;
  state: ProbeState;
  generation: number;
}

/**
 * The reply a datagram carries, or undefined for anything else (another protocol on the port, a request
 * looped back, a truncated or later-version payload): what arrives on a socket is not trusted.
 */
export function readProbeReply(data: Buffer): ProbeReply | undefined {
  if (data.length < probe.size) return undefined;
  const p = probe.decode(data, 0);
  if (p.magic !== probeMagic || p.version !== probeVersion || p.type !== ProbeType.Reply) return undefined;
  const state = p.state === ProbeState.Ready ? ProbeState.Ready : ProbeState.Down;
  return { session: p.session, seq: p.seq, state, generation: p.generation };
}

/**
 * The slots of strait_progs, the program array the datapath tail-calls (bpf/lib/tail.h): written by the
 * agent with the entry programs, after the maps are filled, never by libbpf at load, so programs still
 * attached from the previous build never reach a program of this build whose maps a layout change left
 * empty. Read first: a slot already holding this object's program is left as it is.
 */
import { type BpfObject, u32 } from '../../native';
import { TailCall, maps } from './layout';

/** Each slot and the program of this object that belongs in it. */
const slots: readonly [TailCall, string][] = [[TailCall.Transit6, 'strait_transit6']];

/** Puts this object's programs in their slots; the slots it wrote. */
export function syncTailCalls(obj: BpfObject): TailCall[] {
  const progs = obj.map(maps.progs.name, u32, u32);
  const written: TailCall[] = [];
  for (const [slot, name] of slots) {
    const program = obj.program(name);
    // A program array answers a lookup with the program's id.
    if (progs.lookup(slot) === program.info().id) continue;
    progs.update(slot, program.fd);
    written.push(slot);
  }
  return written;
}

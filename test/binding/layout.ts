/** TypeScript views of test/bpf/binding_test.h; `layout.test.ts` checks them against the object's BTF. */
import { array, be16, ipv4, mac, struct, u32, u64, u8 } from '../../src/native';

export const testFlowKey = struct({ saddr: ipv4, daddr: ipv4, sport: be16, dport: be16, proto: u8, _pad: array(u8, 3) });
export const testFlowValue = struct({ packets: u64, flags: u32, mac });
export const testCounter = struct({ packets: u64, bytes: u64 });

/** A loaded BPF program: run it on test packets, read its identity. */
import { native } from './binding';

export const ProgType = { SchedCls: 3 } as const;

export interface TestRunOptions {
  /** Runs in the kernel; `durationNs` is the mean per run. */
  repeat?: number;
  /** Room for the packet the program returns (it may grow it); default: input size + 256. */
  dataSizeOut?: number;
  /** A `struct __sk_buff` to start from (mark, ifindex...), for TC programs. */
  ctx?: Buffer;
  /**
   * The skb arrives CHECKSUM_COMPLETE (skb->csum over the packet, as from a NIC that sums what it
   * receives), and the kernel fails the run with EBADMSG if the program left skb->csum wrong
   * (BPF_F_TEST_SKB_CHECKSUM_COMPLETE, kernel 6.12).
   */
  checksumComplete?: boolean;
}

const BPF_F_TEST_SKB_CHECKSUM_COMPLETE = 1 << 2;

export interface TestRunResult {
  retval: number;
  durationNs: number;
  data: Buffer;
}

export class BpfProgram {
  private closed = false;

  constructor(
    readonly name: string,
    private readonly fdValue: number,
    readonly type: number,
    private readonly owned: boolean,
  ) {}

  /** Loads raw instructions (8 bytes each); the returned program owns its fd. */
  static fromInstructions(type: number, insns: Buffer): BpfProgram {
    const fd = native().progLoadInsns(type, insns);
    return new BpfProgram(native().progInfo(fd).name, fd, type, true);
  }

  /**
   * Identity of any loaded program, by id. BPF_PROG_GET_FD_BY_ID needs CAP_SYS_ADMIN, which the agent
   * does not have (docs/helm.md): the agent names its programs from their pins instead.
   */
  static infoById(id: number): { id: number; name: string; type: number; tag: string } {
    const fd = native().fdById('prog', id);
    try {
      return native().progInfo(fd);
    } finally {
      native().closeFd(fd);
    }
  }

  get fd(): number {
    if (this.closed) throw new Error(`program '${this.name}' is closed`);
    return this.fdValue;
  }

  /** BPF_PROG_TEST_RUN: runs the program on `data` in the kernel. */
  testRun(data: Buffer, options: TestRunOptions = {}): TestRunResult {
    const r = native().progTestRun(
      this.fd,
      data,
      options.dataSizeOut ?? data.length + 256,
      options.repeat ?? 1,
      options.ctx ?? null,
      options.checksumComplete ? BPF_F_TEST_SKB_CHECKSUM_COMPLETE : 0,
    );
    return { retval: r.retval, durationNs: r.duration, data: r.data };
  }

  info(): { id: number; name: string; type: number; tag: string } {
    return native().progInfo(this.fd);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.owned) native().closeFd(this.fdValue);
  }
}

/** A pool IPAM handler for tests of the protocol: records every call and answers what the test set. */
import type { IpamHandler } from '../../src/pool-ipam/ipam-server';
import type {
  AddRequest,
  AddResponse,
  CheckRequest,
  DelRequest,
  GcRequest,
  GcResponse,
  StatusResponse,
} from '../../src/pool-ipam/protocol';

export type Recorded =
  | { command: 'ADD'; request: AddRequest }
  | { command: 'CHECK'; request: CheckRequest }
  | { command: 'DEL'; request: DelRequest }
  | { command: 'GC'; request: GcRequest }
  | { command: 'STATUS' };

export class RecordingHandler implements IpamHandler {
  readonly calls: Recorded[] = [];
  addResponse: AddResponse = { ips: [], routes: [] };
  gcResponse: GcResponse = { released: [] };
  statusResponse: StatusResponse = { ready: true };
  /** Thrown by every call while set. */
  fail?: unknown;

  private answer<T>(call: Recorded, value: T): Promise<T> {
    this.calls.push(call);
    return this.fail === undefined ? Promise.resolve(value) : Promise.reject(this.fail);
  }

  add(request: AddRequest) {
    return this.answer({ command: 'ADD', request }, this.addResponse);
  }
  check(request: CheckRequest) {
    return this.answer({ command: 'CHECK', request }, undefined);
  }
  del(request: DelRequest) {
    return this.answer({ command: 'DEL', request }, undefined);
  }
  gc(request: GcRequest) {
    return this.answer({ command: 'GC', request }, this.gcResponse);
  }
  status() {
    return this.answer({ command: 'STATUS' }, this.statusResponse);
  }
}

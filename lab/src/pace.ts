/** How fast a lab may be expected to move: a host's pace, or an emulated VM's (qemu TCG). */
import type { LabOptions } from './lab';
import { type LabPace, hostPace } from './lab-test';

/**
 * A lab in the VM of `npm run test:vm` when it is emulated (qemu TCG: this project's CI machine has no
 * usable hardware KVM for Debian's kernel), where a node process starts ten times slower and each round
 * of an idle agent or controller costs ten times the CPU. Heartbeats must not age out while agents start
 * or restart; convergence, the start of each probe process and the echo server's answer get time, and
 * two probes run at once instead of four. Agents and controllers take a round
 * a second instead of four or five: at the host's pace the nine of them at rest took 0.85 of the VM's two
 * CPUs, and a probe process then needed 5 s to start instead of 0.4 s. Gateway probes go every 0.5 s (a
 * dead gateway in 1.5 s): at the host's 0.05 s a node of the multi-VM lab judged a live gateway down for
 * a second under load, failed over and back, and a check's packets were lost in between.
 */
export const emulatedLab = {
  heartbeatTimeout: 120,
  convergeTimeoutMs: 300_000,
  controllerInterval: 1,
  agentInterval: 1,
  agentProbeInterval: 0.5,
} satisfies Partial<LabOptions>;
export const emulatedPace: LabPace = {
  convergeTimeoutMs: emulatedLab.convergeTimeoutMs,
  probeStartTimeoutMs: 60_000,
  echoWaitMs: 10_000,
  // As before the host's went to 0.05 s: an emulated VM's ESP path lost one of three requests 50 ms apart.
  pingIntervalS: 0.2,
  concurrency: 2,
  scrapeTimeoutMs: 60_000,
};

export type LabPaceName = 'host' | 'emulated';

/** The lab's settings (`lab up`) and the test's pace (`lab test`) of a named pace. */
export const labPaces: Record<LabPaceName, { lab: Partial<LabOptions>; test: LabPace }> = {
  host: { lab: {}, test: hostPace },
  emulated: { lab: emulatedLab, test: emulatedPace },
};

/**
 * `npm run bench -- multivm` (root; minutes, only when named): the figures across VMs. The three local
 * VMs of the multi-VM lab (test/multivm/lab-runs.ts) are booted once; on each run (eBPF, the kernel
 * fallback, the fallback over IPsec) the lab is brought up, checked to have converged (`lab.sh test`),
 * measured (test/multivm/figures.ts: tcp-crr and iperf3 pod to pod across the peering, and between the
 * gateway VMs over the public network, the plain-route limit of these emulated wires, in the same run),
 * and taken down. Under TCG these are the emulator's costs: compare ratios, not absolute figures.
 */
import { buildCrr } from './e2e/traffic';
import { type CrossFigures, crossVmFigures } from '../multivm/figures';
import { type LabRun, bootMultiVmLab, labRuns, minutes } from '../multivm/lab-runs';
import type { BenchFigure, BenchSuite } from './result';

const untimed = <T>(_phase: string, action: () => Promise<T>) => action();

function figuresOf(run: LabRun, measured: CrossFigures[]): BenchFigure[] {
  const [plain] = measured;
  return measured.flatMap((f) => [
    {
      suite: 'multivm',
      name: `${run.name}: ${f.path}: connections`,
      value: Math.round(f.connectionsPerSecond),
      unit: 'conn/s',
      note: `${(f.connectionsPerSecond / plain!.connectionsPerSecond).toFixed(2)}× the plain route`,
    },
    {
      suite: 'multivm',
      name: `${run.name}: ${f.path}: stream`,
      value: Math.round(f.streamMbps),
      unit: 'Mbit/s',
      note: `${(f.streamMbps / plain!.streamMbps).toFixed(2)}× the plain route`,
    },
  ]);
}

export const run: BenchSuite = async () => {
  buildCrr();
  const lab = await bootMultiVmLab(untimed);
  const figures: BenchFigure[] = [];
  try {
    for (const labRun of Object.values(labRuns)) {
      try {
        await lab.onEvery(lab.labScript(labRun, 'up'), minutes(5), labRun);
        await lab.onEvery(lab.labScript(labRun, 'test'), minutes(6), labRun);
        figures.push(
          ...figuresOf(labRun, await crossVmFigures((machine, script, timeoutMs) => lab.machines.exec(machine, script, timeoutMs))),
        );
      } finally {
        await lab.onEvery(lab.labScript(labRun, 'down'), minutes(3), labRun);
      }
    }
  } finally {
    lab.stop();
  }
  return figures;
};

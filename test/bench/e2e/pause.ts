/**
 * Pauses a lab's controllers and agents (SIGSTOP) while the bench measures: the datapath is kernel state
 * and carries traffic without them, and on 2 cores their reconciles would compete with the traffic.
 * Each is a supervisor and its child (lab/src/supervise.ts): both are paused, the supervisor first (a
 * stopped child is no exit to it). The returned function resumes them (SIGCONT), the child first.
 */
import { childPid, knownProcesses, processPid } from '../../../lab/src/processes';

export function pauseControlPlane(runDir: string): () => void {
  const pids = knownProcesses(runDir)
    .filter((name) => name.startsWith('agent-') || name.startsWith('controller-'))
    .flatMap((name) => [processPid(runDir, name), childPid(runDir, name)])
    .filter((pid): pid is number => pid !== undefined);
  for (const pid of pids) process.kill(pid, 'SIGSTOP');
  return () => {
    for (const pid of [...pids].reverse()) process.kill(pid, 'SIGCONT');
  };
}

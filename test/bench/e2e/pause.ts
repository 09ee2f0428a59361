/**
 * Pauses a lab's controllers and agents (SIGSTOP) while the bench measures: the datapath is kernel state
 * and carries traffic without them, and on 2 cores their reconciles would compete with the traffic.
 * The returned function resumes them (SIGCONT).
 */
import { knownProcesses, processPid } from '../../../lab/src/processes';

export function pauseControlPlane(runDir: string): () => void {
  const pids = knownProcesses(runDir)
    .filter((name) => name.startsWith('agent-') || name.startsWith('controller-'))
    .map((name) => processPid(runDir, name))
    .filter((pid): pid is number => pid !== undefined);
  for (const pid of pids) process.kill(pid, 'SIGSTOP');
  return () => {
    for (const pid of pids) process.kill(pid, 'SIGCONT');
  };
}

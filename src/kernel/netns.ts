/** Network namespaces by name (/run/netns/NAME), as `ip netns` manages them. */
import { randomBytes } from 'node:crypto';
import { ip } from './command';

export const netnsPath = (name: string) => `/run/netns/${name}`;
/** The name of a namespace given by its path (the native binding takes paths, `ip -n` names). */
export const netnsNameOf = (path?: string) => path?.replace(/^\/run\/netns\//, '');

export function createNetns(name: string): void {
  ip(['netns', 'add', name]);
}

/** Deletes a namespace; returns whether it existed. */
export function deleteNetns(name: string): boolean {
  try {
    ip(['netns', 'del', name]);
    return true;
  } catch {
    return false;
  }
}

const processExists = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * Runs `use` in a new namespace that is deleted afterwards, also when `use` throws. A process killed
 * meanwhile (a benchmark killed half-way) cannot delete its own: the names carry the pid, and the next
 * one made with the same prefix deletes those whose process is gone.
 */
export async function withThrowawayNetns<T>(prefix: string, use: (name: string) => T | Promise<T>): Promise<T> {
  for (const line of ip(['netns', 'list']).split('\n')) {
    const left = new RegExp(`^(${prefix}-(\\d+)-[0-9a-f]{6})\\b`).exec(line);
    if (left && !processExists(Number(left[2]))) deleteNetns(left[1]!);
  }
  const name = `${prefix}-${process.pid}-${randomBytes(3).toString('hex')}`;
  createNetns(name);
  try {
    return await use(name);
  } finally {
    deleteNetns(name);
  }
}

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

/** Runs `use` in a new namespace that is deleted afterwards, also when `use` throws. */
export async function withThrowawayNetns<T>(prefix: string, use: (name: string) => T | Promise<T>): Promise<T> {
  const name = `${prefix}-${process.pid}-${randomBytes(3).toString('hex')}`;
  createNetns(name);
  try {
    return await use(name);
  } finally {
    deleteNetns(name);
  }
}

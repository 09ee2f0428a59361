/** The IPv4 main table of a namespace as `ip -j` shows it, for assertions about Strait's routes. */
import { ip } from '../../src/kernel/command';

export interface ShownRoute {
  dst: string;
  dev?: string;
  protocol?: string;
  metric?: number;
}

export const mainRoutes = (netns: string): ShownRoute[] =>
  JSON.parse(ip(['-4', '-j', 'route', 'show', 'table', 'main'], netns)) as ShownRoute[];

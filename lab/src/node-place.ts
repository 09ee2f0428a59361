/** Where a node's links are: a namespace of this machine, or (a lab across machines) this machine itself. */
export type NodePlace = { netns: string } | 'this machine';

/** `argv` run in the node's place. */
export const inPlace = (place: NodePlace, argv: string[]) =>
  place === 'this machine' ? argv : ['ip', 'netns', 'exec', place.netns, ...argv];

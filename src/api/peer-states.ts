/** A peering's state (src/netmgr/network-manager.ts), as the controller status and its metrics name it. */
export const peerStates = ['waiting-for-peer', 'refused', 'remapped', 'ready'] as const;

/** A peering's state. */
export type PeerState = (typeof peerStates)[number];

/** The version of the IPAM state document (ipam-state.ts): its schema requires it; its reader names it when refusing another. */
export const ipamStateVersion = 1;

/** A NetworkConfig status network that is the spec's own: the receiver kept it as the owner numbers it. */
export const notRemapped = 'None';

/** The MTU of every link of a lab (its topology's `mtu`): from IPv6's minimum link MTU (1280) to jumbo frames (9000). */
export const minimumMtu = 1280;
export const maximumMtu = 9000;
export const defaultMtu = 1500;

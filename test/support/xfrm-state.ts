/** Packets each ESP state carried, read from `ip -s xfrm state`: "N(bytes), M(packets)" under "lifetime current". */
export const saPacketCounts = (xfrmState: string): number[] =>
  [...xfrmState.matchAll(/lifetime current:\s*\n\s*\d+\(bytes\), (\d+)\(packets\)/g)].map((m) => Number(m[1]));

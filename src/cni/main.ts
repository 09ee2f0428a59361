#!/usr/bin/env node
/**
 * `strait-ipam`, the CNI IPAM plugin of Strait's pool IPAM (installed to /opt/cni/bin). It runs once per
 * CNI call, so it loads node built-ins, the small modules of src/cni and src/pool-ipam/protocol, and the
 * validators the build compiled for what it reads (no TypeBox, no ajv compiler: test/cli/start-up.test.ts).
 */
import { runPlugin } from './plugin';

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

runPlugin(process.env, readStdin).then(({ stdout, exitCode }) => {
  // Exit once stdout is flushed: nothing else is left to wait for.
  process.stdout.write(stdout, () => process.exit(exitCode));
});

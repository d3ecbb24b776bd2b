#!/usr/bin/env node
// Runs the compiled CLI (npm run build produces dist/), first restarting once with the V8 flags
// that Node reads only when it starts (src/cli/node-flags.ts).
import { restartWithNodeFlags } from '../dist/cli/node-flags.js';

restartWithNodeFlags();
const { main } = await import('../dist/cli/main.js');
await main(process.argv.slice(2));

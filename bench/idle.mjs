/**
 * What an idle server costs (docs/benchmarks.md, "An idle server"): the CPU the server process
 * and its stubs spend while nothing is asked of them, beside the real Triton on the same
 * repository, both up at once. A host with many models pays this per stub whatever its load.
 *
 *   node bench/idle.mjs [--window-ms 30000] [--settle-ms 15000] [--rounds 2] [--servers tritium,triton]
 *
 * Each round starts the servers on bench/models/vs-triton (three Python models, one instance
 * each), waits --settle-ms after they are ready (Node's collector and compiler threads finish
 * start-up's work about 10 s after ready; 5 s measured part of it), then reads utime + stime
 * from /proc of each server process and of its descendants (stubs, tritium's fork server)
 * before and after the window. Figures are the percentage of one core, medians over rounds.
 */
import { checkFlags, list, positive, showHelp } from './lib/options.mjs';
import { treeCpu } from './lib/proc-stats.mjs';
import { fmt, median, table } from './lib/report.mjs';
import { startTritium } from './lib/server.mjs';
import { ensureTriton, startTriton, stopServer } from './lib/triton.mjs';
import { arg } from './grpc-common.mjs';

const USAGE = 'usage: node bench/idle.mjs [--window-ms MS] [--settle-ms MS] [--rounds N] [--servers tritium,triton]';
const argv = process.argv.slice(2);
checkFlags(argv, ['window-ms', 'settle-ms', 'rounds', 'servers', 'help'], ['help'], USAGE);
if (showHelp({ help: argv.includes('--help') }, USAGE)) process.exit(0);
const windowMs = Math.round(positive('window-ms', arg('window-ms', '30000')));
const settleMs = Math.round(positive('settle-ms', arg('settle-ms', '15000')));
const rounds = Math.round(positive('rounds', arg('rounds', '2')));
const servers = list(arg('servers', 'tritium,triton'));
for (const s of servers) if (s !== 'tritium' && s !== 'triton') throw new Error(`--servers takes tritium and triton, not ${s}`);

const REPO = new URL('./models/vs-triton', import.meta.url).pathname;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Per server: the percentages of one core of each round. */
const results = new Map(servers.map((s) => [s, { server: [], children: [], processes: 0 }]));
const tritonBin = servers.includes('triton') ? ensureTriton() : undefined;
for (let round = 1; round <= rounds; round++) {
  const up = [];
  try {
    for (const s of servers) {
      if (s === 'tritium') {
        const t = await startTritium({ repos: REPO });
        up.push({ name: s, pid: t.proc.pid, stop: () => t.stop() });
      } else {
        const t = await startTriton(tritonBin, { repo: REPO });
        up.push({ name: s, pid: t.proc.pid, stop: () => stopServer(t) });
      }
    }
    await sleep(settleMs);
    const before = up.map((u) => treeCpu(u.pid));
    await sleep(windowMs);
    up.forEach((u, i) => {
      const after = treeCpu(u.pid);
      const r = results.get(u.name);
      r.server.push(((after.server - before[i].server) / (windowMs / 1000)) * 100);
      r.children.push(((after.children - before[i].children) / (windowMs / 1000)) * 100);
      r.processes = after.processes;
      console.log(
        `[round ${round}] ${u.name}: server ${fmt(r.server.at(-1), 2)} %, stubs ${fmt(r.children.at(-1), 2)} % of a core (${after.processes} child processes)`,
      );
    });
  } finally {
    for (const u of up) await u.stop();
  }
}

console.log(`
\`\`\`
command: node bench/idle.mjs --window-ms ${windowMs} --settle-ms ${settleMs} --rounds ${rounds} --servers ${servers.join(',')}
repository: bench/models/vs-triton (add_sub, identity_fp32, batch_sleep; one instance each); ${settleMs} ms after ready, then a ${windowMs} ms window
\`\`\`
`);
console.log(
  table(
    ['server', 'server process, % of a core', 'stubs and helpers, % of a core', 'child processes'],
    servers.map((s) => {
      const r = results.get(s);
      return [s, fmt(median(r.server), 2), fmt(median(r.children), 2), String(r.processes)];
    }),
  ),
);

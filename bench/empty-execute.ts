/**
 * Round trip of an empty `execute` through the real Python backend: Node builds the `exec`
 * message (StubInstance), the real stub runtime builds `pb_utils.InferenceRequest`s, calls the
 * model's `execute` (which returns an empty response per request), packs `exec_done`, and Node
 * resolves the response. One request at a time, sequentially, timed on Node.
 *
 *   npx vite-node bench/empty-execute.ts -- [--n 100000] [--warmup 10000] [--spin-us 50]
 *                                           [--spin-mode adaptive|always|never]
 *
 * Python comes from $TRITIUM_PYTHON (default .venv/bin/python); TRITIUM_STUB_OBJECTS=python runs
 * the stub's pure-Python pb_utils objects. Also prints the CPU time of Node and of the stub per
 * round trip.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { StubInstance } from '../src/backends/python/stub-instance.js';
import { createLogger } from '../src/core/logger.js';
import { PendingRequestImpl } from '../src/core/request/pending.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const python = path.resolve(root, process.env.TRITIUM_PYTHON ?? '.venv/bin/python');
const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const N = arg('n', 100_000);
const spinModeArg = process.argv.includes('--spin-mode') ? process.argv[process.argv.indexOf('--spin-mode') + 1] : 'adaptive';
if (spinModeArg !== 'adaptive' && spinModeArg !== 'always' && spinModeArg !== 'never') throw new Error(`--spin-mode: ${spinModeArg}`);
const spinMode: 'adaptive' | 'always' | 'never' = spinModeArg;
const spinUs = arg('spin-us', 50);
const WARMUP = arg('warmup', 10_000);
const modelDir = path.join(root, 'bench', 'models', 'empty');

const logger = createLogger({ info: false, warning: true, error: true, verbose: 0 });
const instance = new StubInstance({
  modelName: 'empty',
  instanceName: 'empty_0_0',
  kind: 'CPU',
  deviceId: 0,
  modelFile: path.join(modelDir, '1', 'model.py'),
  python,
  initArgs: {
    model_config: JSON.stringify({ name: 'empty', output: [{ name: 'OUT' }], max_batch_size: 0 }),
    model_instance_kind: 'CPU',
    model_instance_name: 'empty_0_0',
    model_instance_device_id: '0',
    model_repository: modelDir,
    model_version: '1',
    model_name: 'empty',
  },
  decoupled: false,
  shmDefaultByteSize: 1 << 20,
  shmGrowthByteSize: 1 << 20,
  stubTimeoutSeconds: 30,
  ipcWait: { spinUs, spinMode },
  logger,
  hooks: { onReadinessChange() {}, onRestart() {}, warmup: async () => {} },
});
await instance.start();

/** utime+stime (s) of the stub processes this process started. */
const stubCpu = (): number => {
  let total = 0;
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(f[1]) === process.pid) total += (Number(f[11]) + Number(f[12])) / 100;
    } catch {
      /* exited meanwhile */
    }
  }
  return total;
};
const samples = new Float64Array(N);
let cpu0 = process.cpuUsage();
let stub0 = stubCpu();
for (let i = 0; i < WARMUP + N; i++) {
  const t0 = process.hrtime.bigint();
  // The round trip ends when the response reaches the request's sink (after execute resolved).
  const ok = await new Promise<boolean>((resolve) => {
    const pr = new PendingRequestImpl(
      { modelName: 'empty', modelVersion: '1', id: '', parameters: {}, inputs: [] },
      1,
      '',
      0,
      0,
      '1',
      (r) => {
        r.release?.();
        resolve(r.error === undefined);
      },
      () => {},
    );
    void instance.execute([pr]);
  });
  const dt = Number(process.hrtime.bigint() - t0);
  if (i === WARMUP - 1) {
    cpu0 = process.cpuUsage();
    stub0 = stubCpu();
  }
  if (!ok) throw new Error('empty execute failed');
  if (i >= WARMUP) samples[i - WARMUP] = dt;
}
const cpu = process.cpuUsage(cpu0);
const stubUs = ((stubCpu() - stub0) / N) * 1e6;
await instance.stop(5000);

samples.sort();
const q = (p: number) => (samples[Math.min(N - 1, Math.floor(p * N))]! / 1000).toFixed(1);
console.log(`setup: ${N} sequential empty executes after ${WARMUP} warm-up, model bench/models/empty, python ${python}`);
console.log(`empty execute round trip: median ${q(0.5)} µs, p90 ${q(0.9)} µs, p99 ${q(0.99)} µs`);
console.log(
  `CPU per round trip: node ${((cpu.user + cpu.system) / N).toFixed(1)} µs, stub ${stubUs.toFixed(1)} µs ` +
    `(spin-mode=${spinMode}, spin-us=${spinUs}, TRITIUM_STUB_OBJECTS=${process.env.TRITIUM_STUB_OBJECTS ?? 'c'})`,
);

/**
 * Preloaded into a server by bench/allocation.mjs (`NODE_OPTIONS=--require <this file>`): V8's
 * GCProfiler runs from the start; each SIGUSR2 stops it, appends what it recorded since the last
 * signal to the JSON file GCPROF_OUT, and starts it again. The benchmark signals before and after
 * its measured window and reads the second record.
 */
const fs = require('node:fs');
const v8 = require('node:v8');

const out = process.env.GCPROF_OUT;
if (out) {
  const records = [];
  let profiler = new v8.GCProfiler();
  profiler.start();
  process.on('SIGUSR2', () => {
    records.push(profiler.stop());
    fs.writeFileSync(out, JSON.stringify(records));
    profiler = new v8.GCProfiler();
    profiler.start();
  });
}

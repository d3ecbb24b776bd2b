/**
 * This checkout against another build of tritium (`--before <checkout>`, its dist/ and
 * native/build built), measured in alternating runs so that both see the machine in the same
 * states: round 1 before, after; round 2 before, after; ...
 */
import path from 'node:path';
import { machine } from '../grpc-common.mjs';
import { commandLine, loadAverage, toolVersion } from './report.mjs';
import { ROOT } from './server.mjs';

/**
 * Runs `measure(root, name)` `rounds` times per build, alternating; `progress(round, name, result)`
 * says what each run found. Resolves with { builds: { [name]: root }, runs: { [name]: result[] },
 * header: the report's first lines (command line of `script`, date, load, machine, builds) }.
 */
export async function alternateBuilds({ script, before, rounds, measure, progress }) {
  const started = new Date();
  const load0 = loadAverage();
  const builds = before ? { before: path.resolve(before), after: ROOT } : { after: ROOT };
  const runs = Object.fromEntries(Object.keys(builds).map((b) => [b, []]));
  for (let round = 0; round < rounds; round++) {
    for (const [name, root] of Object.entries(builds)) {
      const r = await measure(root, name);
      runs[name].push(r);
      progress(round, name, r);
    }
  }
  const header = [
    `command: ${commandLine(script)}`,
    `date: ${started.toISOString()}, ${Math.round((Date.now() - started.getTime()) / 1000)} s; load average ${load0} at start, ${loadAverage()} at end`,
    `machine: ${machine()}`,
    ...Object.entries(builds).map(([name, dir]) => `${name}: ${dir} (${toolVersion('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'])})`),
  ];
  return { builds, runs, header };
}

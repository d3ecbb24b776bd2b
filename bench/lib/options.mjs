/**
 * Benchmark helper: the command-line options bench/vs-triton.mjs and bench/floor.mjs share, read
 * with arg() of bench/grpc-common.mjs (`--name value` or `--name=value`).
 */
import { arg } from '../grpc-common.mjs';

/** Throws on an argument that is not `--flag` of `known` or lacks its value (all but `booleans` take one). */
export function checkFlags(argv, known, booleans, usage) {
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([^=]+)(=.*)?$/.exec(argv[i]);
    if (!m || !known.includes(m[1])) throw new Error(`unknown argument ${argv[i]}\n\n${usage}`);
    if (!m[2] && !booleans.includes(m[1])) {
      if (i + 1 >= argv.length) throw new Error(`--${m[1]} needs a value`);
      i++;
    }
  }
}

/** `text` of option --`name` as a positive number, or an error naming the option. */
export function positive(name, text) {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, not ${text}`);
  return n;
}

/** A comma-separated list, trimmed, without empty items. */
export function list(text) {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/**
 * The perf_analyzer windows: --warmup-ms, --server-warmup-ms, --measure-ms (shorter defaults
 * under `quick`) and --stability, as { warmupMs, serverWarmupMs, measureMs, stability }.
 */
export function windowOptions(quick) {
  return {
    warmupMs: Math.round(positive('warmup-ms', arg('warmup-ms', quick ? '300' : '1000'))),
    serverWarmupMs: Math.round(positive('server-warmup-ms', arg('server-warmup-ms', quick ? '1000' : '3000'))),
    measureMs: Math.round(positive('measure-ms', arg('measure-ms', quick ? '500' : '2000'))),
    stability: positive('stability', arg('stability', '10')),
  };
}

/** Whether --help was asked (`opts.help`); if so, prints `usage` on stdout and the caller stops there. */
export function showHelp(opts, usage) {
  if (opts.help) console.log(usage);
  return opts.help;
}

/**
 * Logs from model.py, end to end: pb_utils.Logger at every level (VERBOSE only with
 * --log-verbose), print() to stdout and stderr, and Python `logging` reach the server log with
 * Triton's severity letter and a label naming the model and the instance.
 *
 * Model: test/models/log_channels (one tagged line per channel in initialize and execute).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, pythonResult, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

const LABEL = 'log_channels/log_channels_0_0';
let quiet: Tritium;
let verbose: Tritium;

async function infer(t: Tritium): Promise<void> {
  const res = await fetch(`${t.http}/v2/models/log_channels/infer`, {
    method: 'POST',
    body: JSON.stringify({ inputs: [{ name: 'IN', shape: [1], datatype: 'INT32', data: [5] }] }),
  });
  expect(res.status).toBe(200);
  expect((await res.json()).outputs[0].data).toEqual([5]);
}

/** The server log line carrying `tag`, waiting briefly for lines still in the pipe. */
async function lineWith(t: Tritium, tag: string): Promise<string | undefined> {
  for (let i = 0; i < 40; i++) {
    const line = t
      .log()
      .split('\n')
      .find((l) => l.includes(tag));
    if (line) return line;
    await new Promise((r) => setTimeout(r, 50));
  }
  return undefined;
}

// `I0520 20:03:25.829575 <pid> <source>] "<message>"` (quoted and escaped, as Triton 2.51 writes it)
const lineRe = (letter: string, source: string, message: string) =>
  new RegExp(`^${letter}\\d{4} \\d{2}:\\d{2}:\\d{2}\\.\\d{6} \\d+ ${source}\\] "${message}"$`);
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

beforeAll(async () => {
  const repo = makeRepo(['log_channels']);
  [quiet, verbose] = await Promise.all([startTritium({ repos: [repo] }), startTritium({ repos: [repo], args: ['--log-verbose=1'] })]);
  await Promise.all([infer(quiet), infer(verbose)]);
}, 120_000);

afterAll(async () => {
  for (const t of [quiet, verbose]) await stopAndExpectNoShm(t);
});

describe('pb_utils.Logger', () => {
  it.each([
    ['I', 'tag-logger-info'],
    ['W', 'tag-logger-warn'],
    ['E', 'tag-logger-error'],
    ['I', 'tag-logger-log-info'],
    ['I', 'tag-logger-execute'],
  ])('%s %s: Triton severity, the caller file:line, labelled with model and instance', async (letter, tag) => {
    const line = await lineWith(quiet, tag);
    expect(line).toMatch(lineRe(letter, 'model\\.py:\\d+', esc(`[${LABEL}] ${tag}`)));
  });

  it('VERBOSE records appear only with --log-verbose', async () => {
    expect(await lineWith(verbose, 'tag-logger-verbose')).toMatch(lineRe('I', 'model\\.py:\\d+', esc(`[${LABEL}] tag-logger-verbose`)));
    expect(await lineWith(verbose, 'tag-logger-log-verbose')).toMatch(lineRe('I', 'model\\.py:\\d+', esc(`[${LABEL}] tag-logger-log-verbose`)));
    expect(quiet.log()).not.toContain('tag-logger-verbose');
    expect(quiet.log()).not.toContain('tag-logger-log-verbose');
  });
});

describe('the configuration a load serves', () => {
  it('is logged at --log-verbose=1 as Triton 2.51 logs it: `model configuration:` and the served config, 4-space JSON', async () => {
    const served = await (await fetch(`${verbose.http}/v2/models/log_channels/config`)).json();
    const line = await lineWith(verbose, '"model configuration:');
    expect(line).toMatch(/^I\d{4} [\d:.]+ \d+ tritium\] "model configuration:\\n\{\\n {4}\\"name\\": \\"log_channels\\",/);
    const message = JSON.parse(line!.slice(line!.indexOf('] ') + 2)) as string;
    expect(message).toBe(`model configuration:\n${JSON.stringify(served, null, 4)}`);
    expect(quiet.log()).not.toContain('model configuration:');
  });
});

describe('print() and Python logging', () => {
  it('print() to stdout arrives at once, as INFO labelled with model and instance', async () => {
    expect(await lineWith(quiet, 'tag-print-initialize')).toMatch(lineRe('I', esc(LABEL), 'tag-print-initialize'));
    expect(await lineWith(quiet, 'tag-print-execute')).toMatch(lineRe('I', esc(LABEL), 'tag-print-execute'));
  });

  it('stderr output arrives as ERROR labelled with model and instance', async () => {
    expect(await lineWith(quiet, 'tag-stderr-initialize')).toMatch(lineRe('E', esc(LABEL), 'tag-stderr-initialize'));
  });

  it('logging records reach the log with their level and logger name, configured or not', async () => {
    // Nothing configured: the stub's handler, with the caller's file and line.
    expect(await lineWith(quiet, 'tag-logging-named-error')).toMatch(lineRe('E', 'model\\.py:\\d+', esc(`[${LABEL}] taglib: tag-logging-named-error`)));
    // After logging.basicConfig() (which logging.warning() calls): stderr in Python's format,
    // still at the record's level.
    expect(await lineWith(quiet, 'tag-logging-warning')).toMatch(lineRe('W', esc(LABEL), 'WARNING:root:tag-logging-warning'));
    // Records below the logger's level stay out, as in plain Python.
    expect(quiet.log()).not.toContain('tag-logging-filtered-info');
  });

  it('each line appears once', () => {
    for (const tag of ['tag-logger-info', 'tag-print-initialize', 'tag-logging-warning', 'tag-stderr-initialize']) {
      expect(
        quiet
          .log()
          .split('\n')
          .filter((l) => l.includes(tag)),
      ).toHaveLength(1);
    }
  });
});

describe('verbose level changed at run time', () => {
  it('reaches the running stubs through POST /v2/logging', async () => {
    expect(quiet.log()).not.toContain('tag-logger-execute-verbose');
    const res = await fetch(`${quiet.http}/v2/logging`, { method: 'POST', body: JSON.stringify({ log_verbose_level: 1 }) });
    expect(res.status).toBe(200);
    expect((await res.json()).log_verbose_level).toBe(1);
    await infer(quiet);
    expect(await lineWith(quiet, 'tag-logger-execute-verbose')).toMatch(lineRe('I', 'model\\.py:\\d+', esc(`[${LABEL}] tag-logger-execute-verbose`)));
  });
});

describe('verbose level values as Triton 2.51 reads them', () => {
  /** POST /v2/logging with the body written as given (so that 1e20 stays 1e20), as [status, body]. */
  async function post(body: string): Promise<[number, unknown]> {
    const res = await fetch(`${quiet.http}/v2/logging`, { method: 'POST', body });
    return [res.status, await res.json()];
  }
  const notUnsigned = [500, { error: 'attempt to access JSON non-unsigned-integer as unsigned-integer' }];

  // TritonJson reads the level as a rapidjson uint64: a float-written literal (even a whole one)
  // or one beyond 64 bits is of another type, as a negative number or a string is.
  it.each(['1e20', '1.0', '1e2', '1.5', '-1', '18446744073709551616', '"1"', 'true', '[1]', '{}'])(
    'refuses log_verbose_level %s with 500, as Triton does',
    async (literal) => {
      await post('{"log_verbose_level":2}');
      expect(await post(`{"log_verbose_level":${literal}}`)).toEqual(notUnsigned);
      // Nothing of a refused update is applied.
      expect(((await post('{}'))[1] as { log_verbose_level: number }).log_verbose_level).toBe(2);
      await post('{"log_verbose_level":0}');
    },
  );

  it.each([
    ['4294967297', 1],
    ['2147483647', 2147483647],
    ['2147483648', 0],
    ['18446744073709551615', 0],
  ])('keeps log_verbose_level %s as the int32 Triton stores, a negative one read as 0', async (literal, level) => {
    const [status, body] = await post(`{"log_verbose_level":${literal}}`);
    expect(status).toBe(200);
    expect((body as { log_verbose_level: number }).log_verbose_level).toBe(level);
    await post('{"log_verbose_level":0}');
  });

  it('keeps a gRPC uint32 level as the same int32', async () => {
    const res = await pythonResult(
      `import json
import tritonclient.grpc as grpcclient
gc = grpcclient.InferenceServerClient('127.0.0.1:${quiet.grpcPort}')`,
      `for v in (3, 2147483648, 4294967295):
    res[str(v)] = gc.update_log_settings({'log_verbose_level': v}, as_json=True)['settings']['log_verbose_level']['uint32_param']
gc.update_log_settings({'log_verbose_level': 0})`,
    );
    expect(res).toEqual({ '3': 3, '2147483648': 0, '4294967295': 0 });
  }, 60_000);
});

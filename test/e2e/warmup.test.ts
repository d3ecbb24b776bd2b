/**
 * End-to-end model warmup (docs/protocol-notes.md, "Model warmup"): every instance runs every sample before
 * the model is ready — zero_data, random_data and input_data_file (raw numeric bytes, and a BYTES
 * file of length-prefixed elements) — as one execute() of batch_size batch-1 requests, `count`
 * times; batch_size 0 skips a sample. A failing sample fails the load and the reason names the
 * sample and the cause. The probe model (test/models/warmup_probe) logs what each execute() got.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, shmFilesOf, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';
import { cmdlineOf, stubPidsOf } from '../helpers/processes.js';
import { waitFor, writeVariant } from './infer-helpers.js';

interface Logged {
  n: number;
  requests: Array<{ id: string; inputs: Record<string, { shape: number[]; hex?: string; items?: string[] }> }>;
}

const IO = `backend: "python"
max_batch_size: 4
input [
  { name: "F" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "S" data_type: TYPE_STRING dims: [ 2 ] },
  { name: "I" data_type: TYPE_INT32 dims: [ 3 ] }
]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`;
const sample = (name: string, f: string, i: string) => `model_warmup [ {
  name: "${name}"
  batch_size: 2
  inputs { key: "F" value: { data_type: TYPE_FP32 dims: [ 4 ] ${f} } }
  inputs { key: "S" value: { data_type: TYPE_STRING dims: [ 2 ] zero_data: true } }
  inputs { key: "I" value: { data_type: TYPE_INT32 dims: [ 3 ] ${i} } }
} ]
`;

let server: Tritium;
let repo: string;

function readLog(model: string, instance: string): Logged[] {
  const file = path.join(repo, model, `execs-${instance}.jsonl`);
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Logged);
}

const le = (kind: 'f' | 'i', values: number[]) => {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, k) => (kind === 'f' ? b.writeFloatLE(v, k * 4) : b.writeInt32LE(v, k * 4)));
  return b.toString('hex');
};
const hex = (s: string) => Buffer.from(s, 'utf8').toString('hex');

beforeAll(async () => {
  repo = makeRepo(['warmup_probe']);
  writeVariant(repo, 'warmup_probe', 'warmup_probe_raise', IO + sample('bad_sample', 'zero_data: true', 'input_data_file: "i_bad.bin"'));
  writeVariant(repo, 'warmup_probe', 'warmup_probe_short', IO + sample('short_sample', 'input_data_file: "f_short.bin"', 'zero_data: true'));
  writeVariant(repo, 'warmup_probe', 'warmup_probe_missing', IO + sample('missing_sample', 'input_data_file: "nope.bin"', 'zero_data: true'));
  server = await startTritium({ repos: [repo], args: ['--exit-on-error=false'] });
}, 120_000);

afterAll(() => stopAndExpectNoShm(server));

describe('warmup samples', () => {
  it('warms every instance with each sample before the model is ready', async () => {
    expect((await fetch(`${server.http}/v2/models/warmup_probe/ready`)).status).toBe(200);
    for (const instance of ['warmup_probe_0_0', 'warmup_probe_0_1']) {
      const log = readLog('warmup_probe', instance);
      // zeros (batch 2) once, random (batch 1) three times, skipped (batch 0) never, files (batch 3).
      expect(
        log.map((e) => e.n),
        instance,
      ).toEqual([2, 1, 1, 1, 3]);
      for (const e of log) {
        for (const r of e.requests) {
          expect(r.inputs.F!.shape).toEqual([1, 4]);
          expect(r.inputs.S!.shape).toEqual([1, 2]);
          expect(r.inputs.I!.shape).toEqual([1, 3]);
        }
      }
    }
  });

  it('feeds zero_data as zeros and empty strings', () => {
    const [zeros] = readLog('warmup_probe', 'warmup_probe_0_0');
    for (const r of zeros!.requests) {
      expect(r.inputs.F!.hex).toBe('00'.repeat(16));
      expect(r.inputs.I!.hex).toBe('00'.repeat(12));
      expect(r.inputs.S!.items).toEqual(['', '']);
    }
  });

  it('feeds random_data as random bytes (empty strings for BYTES)', () => {
    const random = readLog('warmup_probe', 'warmup_probe_0_0').slice(1, 4);
    for (const e of random) {
      const r = e.requests[0]!;
      expect(r.inputs.F!.hex).toMatch(/^[0-9a-f]{32}$/);
      expect(r.inputs.I!.hex).toMatch(/^[0-9a-f]{24}$/);
      expect(r.inputs.S!.items).toEqual(['', '']);
    }
    // 28 random bytes all zero would be a 2^-224 event.
    expect(random.some((e) => /[1-9a-f]/.test(e.requests[0]!.inputs.F!.hex! + e.requests[0]!.inputs.I!.hex!))).toBe(true);
  });

  it('feeds input_data_file bytes from warmup/, BYTES files as length-prefixed elements', () => {
    for (const instance of ['warmup_probe_0_0', 'warmup_probe_0_1']) {
      const files = readLog('warmup_probe', instance)[4]!;
      expect(files.requests.length).toBe(3);
      for (const r of files.requests) {
        // f.bin holds 4 floats and 4 extra bytes that are ignored.
        expect(r.inputs.F!.hex).toBe(le('f', [1.5, -2, 3.25, 4]));
        expect(r.inputs.I!.hex).toBe(le('i', [7, 8, -9]));
        expect(r.inputs.S!.items).toEqual([hex('hello'), hex('wörld')]);
      }
    }
  });

  it('does not run warmup again for inference', async () => {
    const before = readLog('warmup_probe', 'warmup_probe_0_0').length + readLog('warmup_probe', 'warmup_probe_0_1').length;
    const res = await fetch(`${server.http}/v2/models/warmup_probe/infer`, {
      method: 'POST',
      body: JSON.stringify({
        inputs: [
          { name: 'F', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] },
          { name: 'S', shape: [1, 2], datatype: 'BYTES', data: ['a', 'b'] },
          { name: 'I', shape: [1, 3], datatype: 'INT32', data: [1, 2, 3] },
        ],
      }),
    });
    expect(res.status).toBe(200);
    const after = readLog('warmup_probe', 'warmup_probe_0_0').length + readLog('warmup_probe', 'warmup_probe_0_1').length;
    expect(after).toBe(before + 1);
  });
});

describe('warmup after a stub restart', () => {
  it('warms a restarted stub again before it takes traffic', async () => {
    const instance = 'warmup_probe_0_0';
    const before = readLog('warmup_probe', instance).length;
    // The stub's command line carries its instance name; find its process among the server's.
    const stubs = stubPidsOf(server.proc.pid!, 'warmup_probe/1/model.py');
    const target = stubs.find((pid) => cmdlineOf(pid).includes(`\0${instance}\0`));
    expect(target, `stub of ${instance} among ${stubs.join(',')}`).toBeDefined();
    process.kill(target!, 'SIGKILL');
    await waitFor('the instance to be warmed again', () => readLog('warmup_probe', instance).length >= before + 5, 30_000, 50);
    const again = readLog('warmup_probe', instance).slice(before);
    // The same samples as at load: zeros (2), random ×3 (1 each), files (3).
    expect(again.slice(0, 5).map((e) => e.n)).toEqual([2, 1, 1, 1, 3]);
    expect(again[0]!.requests[0]!.id).toMatch(/^warmup_/);
    await waitFor('the model to be ready again', async () => (await fetch(`${server.http}/v2/models/warmup_probe/ready`)).status === 200, 30_000, 50);
  });
});

describe('failing warmup', () => {
  async function reasonOf(model: string): Promise<string> {
    const res = await fetch(`${server.http}/v2/repository/index`, { method: 'POST', body: '{}' });
    const index = (await res.json()) as Array<{ name: string; state?: string; reason?: string }>;
    const e = index.find((x) => x.name === model);
    expect(e?.state, model).toBe('UNAVAILABLE');
    expect((await fetch(`${server.http}/v2/models/${model}/ready`)).status).not.toBe(200);
    return e?.reason ?? '';
  }

  it('fails the load naming the sample and the model error', async () => {
    const reason = await reasonOf('warmup_probe_raise');
    expect(reason).toMatch(/^failed to run warmup sample 'bad_sample': /);
    expect(reason).toMatch(/input I starts with 99/);
    // The failing sample did reach the model.
    expect(readLog('warmup_probe_raise', 'warmup_probe_raise_0_0').map((e) => e.n)).toEqual([2]);
  });

  it('fails the load when a data file is shorter than the sample needs', async () => {
    const reason = await reasonOf('warmup_probe_short');
    expect(reason).toMatch(/short_sample/);
    expect(reason).toMatch(/warmup setting expects 16 bytes, but the data provided from f_short.bin only has 8 bytes/);
    expect(readLog('warmup_probe_short', 'warmup_probe_short_0_0')).toEqual([]);
  });

  it('fails the load when a data file is missing', async () => {
    const reason = await reasonOf('warmup_probe_missing');
    expect(reason).toMatch(/missing_sample/);
    expect(reason).toMatch(/nope\.bin/);
  });

  it('exits at start-up with --exit-on-error and names the sample in the log', async () => {
    const r2 = makeRepo([]);
    writeVariant(r2, 'warmup_probe', 'warmup_probe_raise', IO + sample('bad_sample', 'zero_data: true', 'input_data_file: "i_bad.bin"'));
    const s = await startTritium({ repos: [r2], expectFailure: true });
    const exit = await s.exited;
    expect(exit.code).not.toBe(0);
    expect(s.log()).toMatch(/failed to run warmup sample 'bad_sample': .*input I starts with 99/);
    expect(s.log()).not.toMatch(/Started HTTPService/);
    expect(shmFilesOf(s.proc.pid)).toEqual([]);
  });
});

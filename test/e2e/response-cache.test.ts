/**
 * The response cache (`--cache-config local,size=N`) end to end: a hit never reaches the stub
 * (cache_probe counts the requests it sees), over HTTP and gRPC, with the statistics and metrics
 * Triton moves (cache_hit / cache_miss, no inference or execution for a hit); errors are never
 * cached; least recently used entries go when the size is reached; an ensemble caches at the top
 * and skips its steps on a hit; a decoupled model with the cache is refused at load; and the
 * flags' refusals with tritonserver's texts.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { editConfig, makeRepo, refusedStartLog, pythonResult, startTritium, stopAndExpectNoShm, type Tritium, writeModel } from '../helpers/server.js';

let server: Tritium;
let repo: string;

beforeAll(async () => {
  repo = makeRepo(['cache_probe', 'repeat_int32']);
  // An ensemble with its own cache over cache_probe.
  writeModel(
    repo,
    'cache_ensemble',
    `platform: "ensemble"
max_batch_size: 0
input [{ name: "X" data_type: TYPE_FP32 dims: [ 4 ] }]
output [{ name: "Y" data_type: TYPE_FP32 dims: [ 4 ] }]
response_cache { enable: true }
ensemble_scheduling { step [{ model_name: "cache_probe" model_version: -1 input_map { key: "INPUT" value: "X" } output_map { key: "OUTPUT" value: "Y" } }] }
`,
  );
  // A decoupled model with the cache: refused at load.
  editConfig(repo, 'repeat_int32', (c) => `${c}\nresponse_cache { enable: true }\n`);
  // 1 KiB holds six of cache_probe's answers (about 160 bytes each).
  server = await startTritium({ repos: [repo], args: ['--cache-config=local,size=1024', '--exit-on-error=false', '--strict-readiness=false'] });
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
  fs.rmSync(repo, { recursive: true, force: true });
});

async function probe(
  model: string,
  first: number,
  input = 'INPUT',
): Promise<{ status: number; output?: number[]; calls?: number; error?: string; names?: string[] }> {
  const body = JSON.stringify({ inputs: [{ name: input, shape: [4], datatype: 'FP32', data: [first, 2, 3, 4] }] });
  const res = await fetch(`${server.http}/v2/models/${model}/infer`, { method: 'POST', body });
  const json = (await res.json()) as any;
  if (json.error !== undefined) return { status: res.status, error: json.error };
  const out = Object.fromEntries(json.outputs.map((o: { name: string; data: number[] }) => [o.name, o.data]));
  return { status: res.status, output: out.OUTPUT ?? out.Y, calls: out.CALLS?.[0], names: json.outputs.map((o: { name: string }) => o.name) };
}

async function stats(model: string) {
  const s = ((await (await fetch(`${server.http}/v2/models/${model}/stats`)).json()) as any).model_stats[0];
  const i = s.inference_stats;
  return {
    inferences: s.inference_count as number,
    executions: s.execution_count as number,
    success: i.success.count as number,
    hits: i.cache_hit.count as number,
    misses: i.cache_miss.count as number,
    computed: i.compute_infer.count as number,
  };
}

async function metric(name: string, model?: string): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
  const re = new RegExp(`^${name}${model ? `\\{model="${model}",version="1"\\}` : ''} (\\S+)$`, 'm');
  const m = re.exec(text);
  return m ? Number(m[1]) : undefined;
}

describe('the response cache', () => {
  it('answers a repeated request from the cache over HTTP: the stub is not reached, and the statistics say so', async () => {
    const before = await stats('cache_probe');
    const miss = await probe('cache_probe', 10);
    const hit = await probe('cache_probe', 10);
    expect(miss.output).toEqual([20, 4, 6, 8]);
    expect(hit).toEqual(miss);
    const after = await stats('cache_probe');
    expect(after.success - before.success).toBe(2);
    expect(after.hits - before.hits).toBe(1);
    expect(after.misses - before.misses).toBe(1);
    // A hit is no inference and no execution; computed = success - hits.
    expect(after.inferences - before.inferences).toBe(1);
    expect(after.executions - before.executions).toBe(1);
    expect(after.computed).toBe(after.success - after.hits);
    expect(await metric('nv_cache_num_hits_per_model', 'cache_probe')).toBe(after.hits);
    expect(await metric('nv_cache_num_misses_per_model', 'cache_probe')).toBe(after.misses);
    expect(await metric('nv_cache_num_entries')).toBeGreaterThan(0);
  });

  it('serves a gRPC request from what an HTTP request cached, and the gRPC statistics show the hit', async () => {
    await probe('cache_probe', 20);
    const res = await pythonResult(
      `import json, numpy as np\nimport tritonclient.grpc as g\nc = g.InferenceServerClient('127.0.0.1:${server.grpcPort}')`,
      `
t = g.InferInput("INPUT", [4], "FP32"); t.set_data_from_numpy(np.array([20, 2, 3, 4], np.float32))
r = c.infer("cache_probe", [t])
res["output"] = r.as_numpy("OUTPUT").tolist()
res["calls"] = int(r.as_numpy("CALLS")[0])
s = c.get_inference_statistics("cache_probe", as_json=True)["model_stats"][0]["inference_stats"]
res["hits"] = int(s["cache_hit"]["count"])
`,
    );
    const http = await probe('cache_probe', 20);
    expect(res.output).toEqual([40, 4, 6, 8]);
    expect(res.calls).toBe(http.calls);
    expect(res.hits).toBeGreaterThanOrEqual(2);
  });

  it('never caches an error', async () => {
    const a = await probe('cache_probe', -1);
    const b = await probe('cache_probe', -1);
    expect(a.error).toBe('negative input');
    expect(b.error).toBe('negative input');
    // Both reached the stub: the next computed request sees two more calls than before them.
    const c1 = (await probe('cache_probe', 30)).calls!;
    const d = await probe('cache_probe', -1);
    const c2 = (await probe('cache_probe', 31)).calls!;
    expect(d.error).toBe('negative input');
    expect(c2 - c1).toBe(2);
  });

  it('evicts the least recently used entries past its size, and keeps the recently used ones', async () => {
    const evictions = (await metric('nv_cache_num_evictions')) ?? 0;
    const first = await probe('cache_probe', 100);
    for (let v = 101; v < 110; v++) {
      await probe('cache_probe', v);
      // Keep 100 in use: it stays while older entries go.
      expect((await probe('cache_probe', 100)).calls).toBe(first.calls);
    }
    expect((await metric('nv_cache_num_evictions'))!).toBeGreaterThan(evictions);
    expect((await metric('nv_cache_util'))!).toBeLessThanOrEqual(1);
    // 101 was the least recently used: computed again.
    const again = await probe('cache_probe', 101);
    expect(again.calls).toBeGreaterThan(first.calls!);
  });

  it('caches an ensemble at the top: a hit skips every step', async () => {
    const miss = await probe('cache_ensemble', 7, 'X');
    const stepBefore = await stats('cache_probe');
    const hit = await probe('cache_ensemble', 7, 'X');
    expect(hit.output).toEqual([14, 4, 6, 8]);
    expect(hit.output).toEqual(miss.output);
    const stepAfter = await stats('cache_probe');
    expect(stepAfter.success).toBe(stepBefore.success);
    const e = await stats('cache_ensemble');
    expect([e.hits, e.misses]).toEqual([1, 1]);
  });

  it("refuses a decoupled model with the cache at load, with Triton's text", async () => {
    const index = (await (await fetch(`${server.http}/v2/repository/index`, { method: 'POST', body: '{}' })).json()) as Array<{
      name: string;
      reason?: string;
    }>;
    expect(index.find((m) => m.name === 'repeat_int32')?.reason).toContain(
      "Response Cache does not currently support model repeat_int32 with 'decoupled' transaction policy. Please disable the response cache.",
    );
  });
});

describe('cache flags', () => {
  const refused = refusedStartLog;

  it("refuses both flags at once, and a cache tritium does not have, with tritonserver's texts", async () => {
    expect(await refused(['--cache-config=local,size=1048576', '--response-cache-byte-size=1048576'])).toContain(
      'Error: Incompatible flags --response-cache-byte-size and --cache-config both provided. Please provide one or the other.',
    );
    expect(await refused(['--cache-config=redis,host=localhost'])).toContain("tritium has only the local cache built in; 'redis'");
    expect(await refused(['--cache-config=local,sizes=1'])).toContain("Failed to initialize LocalCache: config didn't contain a valid 'size' field.");
  });

  it('takes the deprecated --response-cache-byte-size as local,size=N', async () => {
    const s = await startTritium({ repos: [makeRepo([])], args: ['--response-cache-byte-size=1048576'] });
    expect(s.log()).toMatch(/\| cache_enabled +\| 1 +\|/);
    await stopAndExpectNoShm(s);
  });
});

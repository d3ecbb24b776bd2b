/**
 * Helpers shared by the end-to-end suites of batching, instances, warmup, metrics and
 * statistics and perf_analyzer: JSON inference over HTTP, model variants written into a temporary
 * repository, a Prometheus text parser and polling.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resolveModel } from '../helpers/server.js';

export interface InferResult {
  status: number;
  /** The error text when status is not 200. */
  error?: string;
  /** Output name → flat data. */
  out: Record<string, Array<number | string>>;
  /** Output name → shape. */
  shapes: Record<string, number[]>;
  /** Client-side wall time of the request, ms. */
  ms: number;
  /** performance.now() when the response was complete. */
  doneAt: number;
}

export interface InferOptions {
  /** First dimension (rows) of IN; default 1. */
  rows?: number;
  /** Second dimension of IN; default 1. */
  width?: number;
  /** Value of every element of IN; default 0. */
  value?: number;
  /** Request parameters (custom ones reach the model, priority/timeout drive the scheduler). */
  params?: Record<string, unknown>;
  /** Input name; default IN. */
  input?: string;
  /** Shape override (no batch dimension logic). */
  shape?: number[];
}

/** POST /v2/models/<model>/infer with one FP32 input as JSON. */
export async function inferJson(base: string, model: string, o: InferOptions = {}): Promise<InferResult> {
  const shape = o.shape ?? [o.rows ?? 1, o.width ?? 1];
  const n = shape.reduce((a, b) => a * b, 1);
  const body: Record<string, unknown> = {
    inputs: [{ name: o.input ?? 'IN', shape, datatype: 'FP32', data: new Array<number>(n).fill(o.value ?? 0) }],
  };
  if (o.params) body.parameters = o.params;
  const t0 = performance.now();
  const res = await fetch(`${base}/v2/models/${model}/infer`, { method: 'POST', body: JSON.stringify(body) });
  const text = await res.text();
  const doneAt = performance.now();
  const json = text ? JSON.parse(text) : {};
  const out: InferResult['out'] = {};
  const shapes: InferResult['shapes'] = {};
  for (const o2 of (json.outputs ?? []) as Array<{ name: string; data: Array<number | string>; shape: number[] }>) {
    out[o2.name] = o2.data;
    shapes[o2.name] = o2.shape;
  }
  return { status: res.status, error: json.error, out, shapes, ms: doneAt - t0, doneAt };
}

/** One add_sub (python_models) request over HTTP/JSON: its status and body text. */
export async function inferAddSub(base: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${base}/v2/models/add_sub/infer`, {
    method: 'POST',
    body: JSON.stringify({
      inputs: [
        { name: 'INPUT0', shape: [4], datatype: 'FP32', data: [1, 2, 3, 4] },
        { name: 'INPUT1', shape: [4], datatype: 'FP32', data: [1, 1, 1, 1] },
      ],
    }),
  });
  return { status: res.status, text: await res.text() };
}

/** Copies model <from> (test/models, fixtures/models, python_models) to <repo>/<name> and replaces its config.pbtxt. */
export function writeVariant(repo: string, from: string, name: string, config: string): void {
  const dir = path.join(repo, name);
  fs.cpSync(resolveModel(from), dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'config.pbtxt'), config);
}

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses Prometheus text exposition (the subset Triton and prom-client print). */
export function parsePrometheus(text: string): { samples: Sample[]; help: Map<string, string>; type: Map<string, string> } {
  const samples: Sample[] = [];
  const help = new Map<string, string>();
  const type = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    let m = /^# HELP (\S+) (.*)$/.exec(line);
    if (m) {
      help.set(m[1]!, m[2]!);
      continue;
    }
    m = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (m) {
      type.set(m[1]!, m[2]!);
      continue;
    }
    if (line.startsWith('#')) continue;
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`unparseable metrics line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    if (m[2]) {
      for (const lm of m[2].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[lm[1]!] = lm[2]!;
    }
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return { samples, help, type };
}

/** GET :<metricsPort>/metrics, parsed. */
export async function scrape(metricsPort: number): Promise<ReturnType<typeof parsePrometheus> & { raw: string }> {
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  const raw = await res.text();
  return { ...parsePrometheus(raw), raw };
}

/** The value of the one sample of `name` whose labels include `labels` (undefined if none). */
export function metricValue(samples: Sample[], name: string, labels: Record<string, string>): number | undefined {
  const hits = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (hits.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${hits.length} series`);
  return hits[0]?.value;
}

/** Polls `check` every `everyMs` until it returns true; throws after `timeoutMs`. */
export async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000, everyMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A fresh path for a marker file the model creates when its execute() starts. */
export function markPath(tag: string): string {
  return path.join(os.tmpdir(), `mark-${process.pid}-${tag}-${Math.random().toString(36).slice(2)}`);
}

/** Waits until the model created the marker (its execute() started). */
export async function waitForMark(mark: string, timeoutMs = 30_000): Promise<void> {
  await waitFor(`marker ${mark}`, () => fs.existsSync(mark), timeoutMs);
  fs.rmSync(mark, { force: true });
}

/**
 * The inputs and outputs of test/models/instance_probe (which reports its initialize args, pid
 * and initialize/execute times), for variants that add their own instance groups and parameters.
 */
export const INSTANCE_PROBE_IO = `backend: "python"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [
  { name: "ARGS" data_type: TYPE_STRING dims: [ 1 ] },
  { name: "PID" data_type: TYPE_INT64 dims: [ 1 ] },
  { name: "TIMES" data_type: TYPE_FP64 dims: [ 4 ] }
]
`;

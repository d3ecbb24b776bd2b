/**
 * Hostile input over gRPC, end to end: fast-check generates ModelInfer and ModelStreamInfer
 * requests that are wrong in every way a client can get them wrong — unknown models, versions,
 * inputs and outputs; bad datatypes; negative, huge and mismatched shapes; raw contents of the
 * wrong size or count; typed contents of the wrong kind; parameters of every type; raw and
 * typed contents together — plus byte-level damage to valid requests (flipped, cut and appended
 * bytes, a compressed flag without an encoding). Thousands of them go to the real server, 16 at
 * a time on one HTTP/2 connection. Every call must end with a gRPC status (and not hang); the
 * server must log no handler that threw, keep its heap, external memory and shared memory as
 * they were (after a warm-up with the same traffic), and still answer a valid request on the
 * same connection and on a new one. The HTTP counterpart is fuzz.test.ts.
 */
import http2 from 'node:http2';
import { create, toBinary } from '@bufbuild/protobuf';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelInferRequestSchema } from '../../src/generated/grpc_service_pb.js';
import { frameMessage, grpcCall, watchCall } from '../helpers/grpc-raw.js';
import { makeRepo, shmFilesOf, startTritium, type Tritium } from '../helpers/server.js';
import { memoryAfterGc } from '../helpers/server-memory.js';

const BATCH = 16;
const RUNS = 320; // 320 × 16 = 5 120 calls
// The same traffic first, so lazily built things (compiled code, caches) exist before measuring.
const WARMUP_RUNS = 120;
const CALL_TIMEOUT_MS = 15_000;

let server: Tritium;
let session: http2.ClientHttp2Session;

beforeAll(async () => {
  // The inspector (loopback, ephemeral port) lets the test collect garbage in the server before
  // reading its memory (helpers/server-memory.ts).
  server = await startTritium({
    repos: [makeRepo(['add_sub', 'string_identity', 'simple_onnx'])],
    env: { NODE_OPTIONS: '--inspect=127.0.0.1:0' },
  });
  session = http2.connect(`http://127.0.0.1:${server.grpcPort}`);
  session.on('error', () => {});
}, 120_000);

afterAll(async () => {
  session?.destroy();
  const pid = server?.proc.pid;
  const exit = await server?.stop();
  expect(exit?.code).toBe(0);
  expect(shmFilesOf(pid)).toEqual([]);
});

// ---------------------------------------------------------------------------------------------
// Generators.

const name = fc.oneof(fc.constantFrom('INPUT0', 'INPUT1', 'OUTPUT0', 'OUTPUT1', 'INPUT', 'OUTPUT', 'input', ''), fc.string({ maxLength: 12 }));
const datatype = fc.oneof(
  fc.constantFrom('FP32', 'INT32', 'INT64', 'UINT8', 'BOOL', 'BYTES', 'FP16', 'BF16', 'FP64'),
  fc.constantFrom('', 'fp32', 'STRING', 'TYPE_FP32'),
  fc.string({ maxLength: 6 }),
);
const dim = fc.oneof(
  { weight: 4, arbitrary: fc.bigInt(-2n, 8n) },
  { weight: 1, arbitrary: fc.bigInt(-(2n ** 63n), 2n ** 63n - 1n) },
  { weight: 1, arbitrary: fc.constantFrom(2n ** 31n, 2n ** 32n + 4n, 2n ** 53n + 1n) },
);
const shape = fc.oneof({ weight: 3, arbitrary: fc.constant([4n]) }, { weight: 2, arbitrary: fc.array(dim, { maxLength: 5 }) });

const parameter = fc.oneof(
  fc.record({ parameterChoice: fc.constant({ case: 'boolParam' as const, value: true }) }),
  fc.bigInt(-(2n ** 63n), 2n ** 63n - 1n).map((v) => ({ parameterChoice: { case: 'int64Param' as const, value: v } })),
  fc.string({ maxLength: 20 }).map((v) => ({ parameterChoice: { case: 'stringParam' as const, value: v } })),
  fc.double().map((v) => ({ parameterChoice: { case: 'doubleParam' as const, value: v } })),
  fc.bigInt(0n, 2n ** 64n - 1n).map((v) => ({ parameterChoice: { case: 'uint64Param' as const, value: v } })),
  fc.constant({}), // no value set
);
const parameterKey = fc.oneof(
  fc.constantFrom('binary_data', 'classification', 'shared_memory_region', 'shared_memory_byte_size', 'shared_memory_offset'),
  fc.constantFrom('priority', 'timeout', 'sequence_id', 'sequence_start', 'sequence_end', 'binary_data_size', 'triton_'),
  fc.string({ maxLength: 10 }),
);
const parameters = fc.dictionary(parameterKey, parameter, { maxKeys: 3 });

const contents = fc.oneof(
  fc.array(fc.float({ noNaN: false }), { maxLength: 8 }).map((v) => ({ fp32Contents: v })),
  fc.array(fc.integer(), { maxLength: 8 }).map((v) => ({ intContents: v })),
  fc.array(fc.bigInt(-(2n ** 63n), 2n ** 63n - 1n), { maxLength: 4 }).map((v) => ({ int64Contents: v })),
  fc.array(fc.boolean(), { maxLength: 8 }).map((v) => ({ boolContents: v })),
  fc.array(fc.uint8Array({ maxLength: 8 }), { maxLength: 4 }).map((v) => ({ bytesContents: v })),
  fc.array(fc.double(), { maxLength: 4 }).map((v) => ({ fp64Contents: v })),
);

const input = fc.record({ name, datatype, shape, parameters, contents }, { requiredKeys: ['name', 'datatype', 'shape'] });
const rawContent = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(16, 0, 4, 15, 17).map((n) => new Uint8Array(n)) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }) },
);

const semantic = fc.record(
  {
    modelName: fc.oneof(fc.constantFrom('add_sub', 'string_identity', 'simple_onnx'), fc.constantFrom('', 'nope', '../add_sub', 'add_sub/1')),
    modelVersion: fc.constantFrom('', '1', '2', '-1', 'x', '01'),
    id: fc.string({ maxLength: 8 }),
    parameters,
    inputs: fc.array(input, { maxLength: 4 }),
    outputs: fc.array(fc.record({ name, parameters }), { maxLength: 3 }),
    rawInputContents: fc.array(rawContent, { maxLength: 4 }),
  },
  { requiredKeys: ['modelName', 'inputs'] },
);

/** A valid add_sub request. */
function validRequest(): Uint8Array {
  const four = () => new Uint8Array(new Float32Array([1, 2, 3, 4]).buffer);
  return toBinary(
    ModelInferRequestSchema,
    create(ModelInferRequestSchema, {
      modelName: 'add_sub',
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [4n] },
        { name: 'INPUT1', datatype: 'FP32', shape: [4n] },
      ],
      rawInputContents: [four(), four()],
    }),
  );
}

/** Damage done to valid bytes. */
const damaged = fc.oneof(
  fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), { minLength: 1, maxLength: 4 }).map((flips) => {
    const b = Buffer.from(validRequest());
    for (const [at, x] of flips) b[at % b.length]! ^= x;
    return b;
  }),
  fc.nat().map((n) => {
    const b = validRequest();
    return Buffer.from(b.subarray(0, n % b.length));
  }),
  fc.uint8Array({ minLength: 1, maxLength: 32 }).map((tail) => Buffer.concat([validRequest(), tail])),
  fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)),
);

interface Call {
  kind: 'semantic' | 'damaged';
  stream: boolean;
  payload: Buffer;
  /** First byte of the message prefix (1 = compressed, sent without grpc-encoding). */
  flag: number;
}

const call: fc.Arbitrary<Call> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.tuple(semantic, fc.boolean()).map(([r, stream]) => ({
      kind: 'semantic' as const,
      stream,
      payload: Buffer.from(toBinary(ModelInferRequestSchema, create(ModelInferRequestSchema, r as never))),
      flag: 0,
    })),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(damaged, fc.boolean(), fc.constantFrom(0, 0, 0, 1))
      .map(([payload, stream, flag]) => ({ kind: 'damaged' as const, stream, payload, flag })),
  },
);

// ---------------------------------------------------------------------------------------------
// One call on the wire.

const statuses = new Map<string, number>();

/** Sends the message and half-closes; resolves with the gRPC status, rejects if none comes in time. */
async function send(c: Call, on: http2.ClientHttp2Session = session): Promise<{ status: string; messages: number }> {
  const stream = grpcCall(on, c.stream ? 'ModelStreamInfer' : 'ModelInfer');
  const answer = watchCall(stream);
  const frame = frameMessage(c.payload);
  frame[0] = c.flag;
  stream.end(frame);
  const what = `a ${c.kind} ${c.stream ? 'stream' : 'unary'} call: ${c.payload.toString('hex').slice(0, 200)}`;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      stream.close();
      reject(new Error(`no status within ${CALL_TIMEOUT_MS} ms for ${what}`));
    }, CALL_TIMEOUT_MS);
  });
  const w = await Promise.race([answer.done, late]).finally(() => clearTimeout(timer));
  if (w.status === undefined) throw new Error(`${what} ended without a gRPC status (HTTP/2 code ${stream.rstCode})`);
  statuses.set(w.status, (statuses.get(w.status) ?? 0) + 1);
  return { status: w.status, messages: w.chunks.length };
}

async function validRequestSucceeds(on: http2.ClientHttp2Session = session): Promise<void> {
  const r = await send({ kind: 'semantic', stream: false, payload: Buffer.from(validRequest()), flag: 0 }, on);
  expect(r).toEqual({ status: '0', messages: 1 });
}

describe('generated malformed gRPC requests', () => {
  it(`${RUNS * BATCH} calls: each ends with a gRPC status; no handler threw; shared memory unchanged; valid requests still work`, async () => {
    const pid = server.proc.pid!;
    await validRequestSucceeds();
    const property = async (runs: number) => {
      const out = await fc.check(
        fc.asyncProperty(fc.array(call, { minLength: BATCH, maxLength: BATCH }), async (calls) => {
          await Promise.all(calls.map((c) => send(c)));
        }),
        { numRuns: runs, endOnFailure: true },
      );
      if (out.failed) throw new Error(`seed ${out.seed}, path ${out.counterexamplePath}: ${(out.errorInstance as Error | undefined)?.message}`);
    };
    await property(WARMUP_RUNS);
    const filesBefore = shmFilesOf(pid).sort();
    const before = await memoryAfterGc(server.log());
    await property(RUNS);
    const after = await memoryAfterGc(server.log());
    const mib = (n: number) => (n / 2 ** 20).toFixed(1);
    console.log(
      `grpc fuzz: ${RUNS * BATCH} calls; server after GC: heap ${mib(before.heapUsed)} → ${mib(after.heapUsed)} MiB, external ${mib(before.external)} → ${mib(after.external)} MiB; ` +
        `statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`,
    );
    // A leak of 400 bytes per call would show as 2 MiB. What V8 keeps besides (feedback, code)
    // moves the heap by up to ~0.8 MiB over a run this size; 40 000 calls measured +0.1 MiB.
    expect(after.heapUsed - before.heapUsed).toBeLessThan(2 * 2 ** 20);
    expect(after.external - before.external).toBeLessThan(1 * 2 ** 20);
    // Most calls are refused; the codes are gRPC's (0-16).
    for (const code of statuses.keys()) expect(Number(code)).toBeLessThanOrEqual(16);
    expect(server.log()).not.toMatch(/gRPC \S+ failed|unhandled|TypeError|RangeError/);
    await new Promise((r) => setTimeout(r, 200)); // output blocks go back a moment after the answers
    expect(shmFilesOf(pid).sort()).toEqual(filesBefore);
    await validRequestSucceeds();
    const fresh = http2.connect(`http://127.0.0.1:${server.grpcPort}`);
    fresh.on('error', () => {});
    await validRequestSucceeds(fresh);
    fresh.destroy();
    expect(server.proc.exitCode).toBeNull();
  }, 180_000);
});

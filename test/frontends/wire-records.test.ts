/**
 * The binary records frontend threads and the main thread exchange for small requests and
 * responses (src/frontends/threads/wire-records.ts), sent through the Outbox over a real ring in
 * shared memory and a real MessageChannel, and read by the Inbox: what the other side reads back
 * is the request or response that was written, field for field and byte for byte; what the
 * records cannot carry goes as an object, in order. The ring itself is tested in
 * record-ring.test.ts; the servers' own paths end to end by test/e2e/frontend-threads.test.ts
 * and by the whole e2e suite under TRITIUM_TEST_HTTP_THREADS / TRITIUM_TEST_GRPC_THREADS.
 */
import { MessageChannel } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import type { InferRequest, InferResponse } from '../../src/core/inference.js';
import type { Tensor } from '../../src/core/tensor.js';
import { Inbox } from '../../src/frontends/threads/inbox.js';
import { Outbox } from '../../src/frontends/threads/outbox.js';
import { createRing, RingReader, RingWriter } from '../../src/frontends/threads/record-ring.js';
import { unpackTensors, type InferMessage, type ResponseMessage } from '../../src/frontends/threads/wire.js';
import { RecordWriter, SMALL_RECORD_BYTES, writeInferRecord, writeResponseRecord } from '../../src/frontends/threads/wire-records.js';

const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

/** What the reading side got: records as the messages they stand for, notices, and objects. */
type Got = InferMessage | ResponseMessage | { t: 'cancel'; no: number } | { t: 'release'; hold: number } | { t: string };

/**
 * An Outbox writing into a ring (16 KiB: a few turns wrap it) and a port, and the Inbox reading
 * them; `next()` resolves with what the next chunk (or chunks) brought.
 */
function channel<M>(): { outbox: Outbox<M>; next: () => Promise<Got[]> } {
  const { port1, port2 } = new MessageChannel();
  const ring = createRing(16 * 1024);
  const got: Got[] = [];
  let arrived: (() => void) | undefined;
  const push = (m: Got): void => {
    got.push(m);
    arrived?.();
  };
  const inbox = new Inbox<Got>(new RingReader(ring), port2, {
    infer: push,
    resp: push,
    cancel: (no) => push({ t: 'cancel', no }),
    release: (hold) => push({ t: 'release', hold }),
    object: push,
  });
  inbox.start();
  closers.push(() => {
    inbox.close();
    port1.close();
    port2.close();
  });
  const next = (): Promise<Got[]> =>
    new Promise((resolve) => {
      // Resolved from a microtask: the rest of the chunk is read by then.
      const done = (): void => {
        arrived = undefined;
        queueMicrotask(() => resolve(got.splice(0)));
      };
      if (got.length > 0) done();
      else arrived = done;
    });
  return { outbox: new Outbox<M>(new RingWriter(ring), port1), next };
}

function tensor(name: string, datatype: Tensor['datatype'], shape: number[], bytes: number[] | Buffer): Tensor {
  return { name, datatype, shape, data: Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes) };
}

function request(over: Partial<InferRequest> = {}): InferRequest {
  return {
    modelName: 'add_sub',
    modelVersion: '',
    id: 'req-1',
    parameters: {},
    inputs: [tensor('INPUT0', 'FP32', [1, 4], Buffer.from(new Float32Array([1, 2, 3, 4]).buffer)), tensor('INPUT1', 'FP32', [1, 4], [9, 8, 7, 6])],
    ...over,
  };
}

/** The request as a frontend would read it back on the main thread (core-host.ts). */
function asRead(m: InferMessage): Omit<Partial<InferRequest>, 'trace'> & { trace?: number } {
  return {
    modelName: m.modelName,
    modelVersion: m.modelVersion,
    id: m.id,
    parameters: m.parameters,
    inputs: unpackTensors(m.inputs, m.bytes),
    ...(m.outputs !== undefined ? { outputs: m.outputs } : {}),
    ...(m.trace !== undefined ? { trace: m.trace } : {}),
    ...(m.traceNo !== undefined ? { traceNo: m.traceNo } : {}),
  };
}

describe('request records', () => {
  const cases: Array<[string, InferRequest, number | undefined]> = [
    ['the common shape', request(), undefined],
    [
      'every parameter type, at the edges of each',
      request({
        parameters: {
          binary_data_output: true,
          off: false,
          priority: 3,
          timeout: 1.5,
          neg: -0,
          nan: Number.NaN,
          big: Number.MAX_SAFE_INTEGER,
          s: 'ünïcödé ✓',
          empty: '',
          i64min: -(2n ** 63n),
          i64: 1234567890123n,
          u64: 2n ** 64n - 1n,
          u64low: 2n ** 63n,
        },
      }),
      undefined,
    ],
    [
      'requested outputs with their parameters, a trace, UTF-8 names and a long id',
      request({
        id: `${'x'.repeat(40)}-é`,
        modelName: 'módel',
        modelVersion: '3',
        traceNo: 77,
        outputs: [
          { name: 'OUTPUT0', parameters: { binary_data: true } },
          { name: 'ÖUT1', parameters: {} },
        ],
        inputs: [tensor('ÏN', 'BYTES', [2], [3, 0, 0, 0, 97, 98, 99, 0, 0, 0, 0]), tensor('EMPTY', 'FP32', [0, 4], [])],
      }),
      12,
    ],
    [
      'a parameter named __proto__ (an own key, as JSON.parse makes it)',
      request({ parameters: JSON.parse('{"__proto__": "x", "constructor": 1}') }),
      undefined,
    ],
    ['no inputs, no dimensions', request({ inputs: [tensor('S', 'INT64', [], [1, 0, 0, 0, 0, 0, 0, 0])] }), undefined],
  ];

  for (const [name, r, trace] of cases) {
    it(`reads back ${name}`, async () => {
      const { outbox, next } = channel();
      expect(outbox.record(writeInferRecord, 5, r, trace)).toBe(true);
      const got = await next();
      expect(got).toHaveLength(1);
      const m = got[0] as InferMessage;
      expect(m.t).toBe('infer');
      expect(m.no).toBe(5);
      const { signal: _s, ...want } = r;
      expect(asRead(m)).toEqual({ ...want, ...(trace !== undefined ? { trace } : {}) });
      // Every tensor starts 8-aligned in the chunk's buffer (typed-array views of it work).
      for (const t of m.inputs) expect(t.offset % 8).toBe(0);
    });
  }

  it('writes nothing and declines what records do not carry', () => {
    const w = new RecordWriter();
    const declined: InferRequest[] = [
      request({ inputs: [{ ...tensor('A', 'FP32', [1], [0, 0, 0, 0]), shm: { region: 'r', offset: 0, byteSize: 4 } }] }),
      request({ inputs: [tensor('A', 'UINT8', [SMALL_RECORD_BYTES], Buffer.alloc(SMALL_RECORD_BYTES))] }),
      request({ inputs: [tensor('A', 'FP32', [1.5], [0, 0, 0, 0])] }),
      request({ inputs: [tensor('A', 'FP32', [-1], [0, 0, 0, 0])] }),
      request({ parameters: { huge: 2n ** 64n } }),
      request({ parameters: { tiny: -(2n ** 63n) - 1n } }),
      request({ outputs: [{ name: 'O', parameters: { huge: 2n ** 70n } }] }),
      request({ parameters: { odd: { nested: 1 } as unknown as string } }),
    ];
    for (const r of declined) {
      expect(writeInferRecord(w, 1, r, undefined)).toBe(false);
      expect(w.length).toBe(0);
    }
    // A record written after a declined one starts where it would have.
    expect(writeInferRecord(w, 2, request(), undefined)).toBe(true);
    const first = w.length;
    expect(writeInferRecord(w, 3, request({ parameters: { huge: 2n ** 64n } }), undefined)).toBe(false);
    expect(w.length).toBe(first);
  });

  it('keeps the order of records, notices and objects posted in one turn', async () => {
    const { outbox, next } = channel();
    outbox.record(writeInferRecord, 1, request({ id: 'a' }), undefined);
    outbox.record(writeInferRecord, 2, request({ id: 'b' }), undefined);
    outbox.post({ t: 'trace-done', trace: 7 });
    outbox.cancel(1);
    outbox.record(writeInferRecord, 3, request({ id: 'c' }), undefined);
    outbox.release(4);
    outbox.post({ t: 'call', method: 'isLive', args: [] });
    const got = await next();
    expect(got.map((m) => (m.t === 'infer' ? `${(m as InferMessage).no}:${(m as InferMessage).id}` : m.t))).toEqual([
      '1:a',
      '2:b',
      'trace-done',
      'cancel',
      '3:c',
      'release',
      'call',
    ]);
    expect(got[3]).toEqual({ t: 'cancel', no: 1 });
    expect(got[5]).toEqual({ t: 'release', hold: 4 });
  });

  it('sends an object with its transferred buffer, moved rather than copied', async () => {
    const { outbox, next } = channel();
    const bytes = new Uint8Array([1, 2, 3, 4]).buffer;
    outbox.post({ t: 'infer', no: 9, modelName: 'm', modelVersion: '', id: '', parameters: {}, inputs: [], bytes }, bytes);
    const [m] = (await next()) as InferMessage[];
    expect(bytes.byteLength).toBe(0); // detached here
    expect(new Uint8Array(m!.bytes)).toEqual(new Uint8Array([1, 2, 3, 4]));
  });

  it('reads each name as written when names repeat or change at the same place', async () => {
    // The reader reuses the string last read at a place when the bytes match; 'Ã©' and 'é' are
    // two characters and two UTF-8 bytes with the same values (C3 A9), and must not be confused.
    const names = ['add_sub', 'add_sub', 'add_suc', 'Ã©', 'é', 'é', 'Ã©', 'add_sub'];
    const { outbox, next } = channel();
    names.forEach((name, i) => {
      const r = request({ modelName: name, inputs: [tensor(name, 'FP32', [1], [0, 0, 0, 0])], parameters: { [name]: i } });
      outbox.record(writeInferRecord, i, r, undefined);
    });
    const got = (await next()) as InferMessage[];
    expect(got.map((m) => m.modelName)).toEqual(names);
    expect(got.map((m) => m.inputs[0]!.name)).toEqual(names);
    expect(got.map((m) => Object.keys(m.parameters)[0])).toEqual(names);
  });

  it('grows the turn buffer past its first size, and sends a turn larger than the ring in chunks that wait for room', async () => {
    const { outbox, next } = channel();
    const n = 200; // about 40 KiB of records into a 16 KiB ring
    for (let i = 0; i < n; i++) {
      const data = Buffer.alloc(97 + i, i & 0xff);
      expect(outbox.record(writeInferRecord, i, request({ id: `r${i}`, inputs: [tensor('IN', 'UINT8', [data.length], data)] }), undefined)).toBe(true);
    }
    const got: InferMessage[] = [];
    while (got.length < n) got.push(...((await next()) as InferMessage[]));
    expect(got).toHaveLength(n);
    got.forEach((m, i) => {
      expect(m.id).toBe(`r${i}`);
      const [t] = unpackTensors(m.inputs, m.bytes);
      expect(t!.data.equals(Buffer.alloc(97 + i, i & 0xff))).toBe(true);
    });
    // The next turn reuses the writer's buffer.
    outbox.record(writeInferRecord, 1, request(), undefined);
    const again = (await next()) as InferMessage[];
    expect(again.map((m) => m.no)).toEqual([1]);
  });
});

describe('chunks', () => {
  it('sends a turn of notices and objects larger than the ring in chunks, in order', async () => {
    // Every kind of record counts towards a chunk's size: 6000 notices and objects in one turn
    // are about 4 times what one chunk of this 16 KiB ring may hold.
    const { outbox, next } = channel();
    const n = 6000;
    for (let i = 0; i < n; i++) {
      if (i % 3 === 0) outbox.cancel(i);
      else if (i % 3 === 1) outbox.release(i);
      else outbox.post({ t: 'trace-done', trace: i });
    }
    const got: Got[] = [];
    while (got.length < n) got.push(...(await next()));
    expect(got).toHaveLength(n);
    got.forEach((m, i) => {
      if (i % 3 === 0) expect(m).toEqual({ t: 'cancel', no: i });
      else if (i % 3 === 1) expect(m).toEqual({ t: 'release', hold: i });
      else expect(m).toEqual({ t: 'trace-done', trace: i });
    });
  });

  it('loses the rest of a chunk whose handler throws, and gives the next chunk its own objects', () => {
    const { port1, port2 } = new MessageChannel();
    const ring = createRing(16 * 1024);
    const got: Got[] = [];
    const inbox = new Inbox<Got>(new RingReader(ring), port2, {
      cancel: (no) => {
        if (no === 1) throw new Error('handler threw');
        got.push({ t: 'cancel', no });
      },
      object: (m) => got.push(m),
    });
    closers.push(() => {
      inbox.close();
      port1.close();
      port2.close();
    });
    const outbox = new Outbox<Got>(new RingWriter(ring), port1);
    // The throw comes before the chunk's first object record.
    outbox.cancel(1);
    outbox.post({ t: 'lost' });
    outbox.flush();
    outbox.post({ t: 'next' });
    outbox.cancel(2);
    outbox.flush();
    expect(() => inbox.drain()).toThrow('handler threw');
    expect(inbox.drain()).toBe(true);
    expect(got).toEqual([{ t: 'next' }, { t: 'cancel', no: 2 }]);
  });

  it('refuses a chunk whose objects did not come', () => {
    const { port1, port2 } = new MessageChannel();
    const ring = createRing(16 * 1024);
    const inbox = new Inbox<Got>(new RingReader(ring), port2, { object: () => {} });
    // A port nobody reads stands for a message that never came.
    const elsewhere = new MessageChannel();
    closers.push(() => {
      inbox.close();
      for (const p of [port1, port2, elsewhere.port1, elsewhere.port2]) p.close();
    });
    const outbox = new Outbox<Got>(new RingWriter(ring), elsewhere.port1);
    outbox.post({ t: 'x' });
    outbox.flush();
    expect(() => inbox.drain()).toThrow('a chunk of 1 object(s) without their message');
  });
});

describe('response records', () => {
  function response(over: Partial<InferResponse> = {}): InferResponse {
    return {
      modelName: 'add_sub',
      modelVersion: '1',
      id: 'req-1',
      outputs: [tensor('OUTPUT0', 'FP32', [1, 4], Buffer.from(new Float32Array([5, 6, 7, 8]).buffer))],
      final: true,
      ...over,
    };
  }

  const cases: Array<[string, InferResponse, { beforeModel: boolean; hold: number | undefined }]> = [
    ['a final response', response(), { beforeModel: false, hold: undefined }],
    ['a held, non-final one with parameters', response({ final: false, parameters: { n: 2, s: 'x', b: true, i: -5n } }), { beforeModel: false, hold: 9 }],
    ['a final flag alone', response({ outputs: [], flagsOnly: true }), { beforeModel: false, hold: undefined }],
    ['one answered before the model', response({ outputs: [] }), { beforeModel: true, hold: undefined }],
  ];

  for (const [name, r, x] of cases) {
    it(`reads back ${name}`, async () => {
      const { outbox, next } = channel();
      expect(outbox.record(writeResponseRecord, 4, r, x)).toBe(true);
      const [m] = (await next()) as ResponseMessage[];
      expect(m).toMatchObject({ t: 'resp', no: 4, modelName: r.modelName, modelVersion: r.modelVersion, id: r.id, final: r.final });
      expect(m!.parameters).toEqual(r.parameters);
      expect(m!.flagsOnly).toBe(r.flagsOnly);
      expect(m!.beforeModel).toBe(x.beforeModel ? true : undefined);
      expect(m!.hold).toBe(x.hold);
      expect(unpackTensors(m!.outputs, m!.bytes)).toEqual(r.outputs);
    });
  }

  it('declines an error response and large outputs', () => {
    const w = new RecordWriter();
    const x = { beforeModel: false, hold: undefined };
    expect(writeResponseRecord(w, 1, response({ outputs: [], error: new Error('x') as never }), x)).toBe(false);
    expect(writeResponseRecord(w, 1, response({ outputs: [tensor('O', 'UINT8', [SMALL_RECORD_BYTES], Buffer.alloc(SMALL_RECORD_BYTES))] }), x)).toBe(false);
    expect(w.length).toBe(0);
  });
});

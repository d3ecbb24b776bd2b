/**
 * Client system shared memory changed under the server, for the generated (fast-check) cases of
 * shm-tamper.test.ts, over HTTP and over gRPC: a region is registered over a fresh /dev/shm object, then
 * the object is shrunk, grown, unlinked or replaced by another of the same name, and only then
 * is `add_sub` asked to read its inputs from and write its outputs to it. The server must answer
 * every case (never fault on a page that is gone), with the right sums where the bytes it needs
 * are still there and an error naming the shrink where they are not; an unlinked or replaced
 * name leaves the region on the object registered, as Triton's mapping does.
 *
 * Layout of the 64-byte object: INPUT0 at 0, INPUT1 at 16, OUTPUT0 at 32, OUTPUT1 at 48 (four
 * FP32 each).
 */
import fs from 'node:fs';
import fc from 'fast-check';

export const OBJECT_BYTES = 64;
const AT = { INPUT0: 0, INPUT1: 16, OUTPUT0: 32, OUTPUT1: 48 } as const;

export type Tamper = { kind: 'none' } | { kind: 'shrink'; to: number } | { kind: 'grow' } | { kind: 'unlink' } | { kind: 'replace'; size: number };

export interface ShmCase {
  tamper: Tamper;
  /** Which of INPUT0, INPUT1 come from the region (else JSON / raw contents). */
  inputsInShm: [boolean, boolean];
  /** Which of OUTPUT0, OUTPUT1 go to the region (else in the response). */
  outputsInShm: [boolean, boolean];
  a: number[];
  b: number[];
}

const four = fc.array(fc.integer({ min: -1000, max: 1000 }), { minLength: 4, maxLength: 4 });
const tamper: fc.Arbitrary<Tamper> = fc.oneof(
  fc.constant({ kind: 'none' as const }),
  fc.integer({ min: 0, max: OBJECT_BYTES - 1 }).map((to) => ({ kind: 'shrink' as const, to })),
  fc.constantFrom(0, 8, 16, 32, 48).map((to) => ({ kind: 'shrink' as const, to })),
  fc.constant({ kind: 'grow' as const }),
  fc.constant({ kind: 'unlink' as const }),
  fc.integer({ min: 0, max: 2 * OBJECT_BYTES }).map((size) => ({ kind: 'replace' as const, size })),
);

export const shmCase: fc.Arbitrary<ShmCase> = fc
  .record({
    tamper,
    inputsInShm: fc.tuple(fc.boolean(), fc.boolean()),
    outputsInShm: fc.tuple(fc.boolean(), fc.boolean()),
    a: four,
    b: four,
  })
  .filter((c) => c.inputsInShm.some(Boolean) || c.outputsInShm.some(Boolean));

/** A tensor's place in the region: what the request's shared-memory parameters say. */
export interface Placement {
  region: string;
  offset: number;
  byteSize: number;
}

/** What the inference call returned, in the protocol's terms reduced to these. */
export type Outcome = { ok: true; outputs: Record<string, number[]> } | { ok: false; message: string };

/** Sends `add_sub` with each input either as data or at its placement, and outputs likewise. */
export type Infer = (
  c: ShmCase,
  inputs: Record<'INPUT0' | 'INPUT1', Placement | number[]>,
  outputs: Record<'OUTPUT0' | 'OUTPUT1', Placement | undefined>,
) => Promise<Outcome>;

let counter = 0;

async function call(httpPort: number, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${httpPort}${path}`, { method: 'POST', body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, text: await res.text() };
}

/**
 * Runs one case end to end; returns why it went wrong, or undefined when the server did as it
 * should. Leaves no region registered and no object in /dev/shm.
 */
export async function runShmCase(c: ShmCase, httpPort: number, infer: Infer): Promise<string | undefined> {
  const n = counter++;
  const key = `fuzzshm_${process.pid}_${n}`;
  const file = `/dev/shm/${key}`;
  const region = `fuzz_${n}`;
  const fd = fs.openSync(file, 'w+');
  try {
    const initial = Buffer.alloc(OBJECT_BYTES);
    Buffer.from(new Float32Array(c.a).buffer).copy(initial, AT.INPUT0);
    Buffer.from(new Float32Array(c.b).buffer).copy(initial, AT.INPUT1);
    fs.writeSync(fd, initial, 0, OBJECT_BYTES, 0);
    const reg = await call(httpPort, `/v2/systemsharedmemory/region/${region}/register`, { key: `/${key}`, offset: 0, byte_size: OBJECT_BYTES });
    if (reg.status !== 200) return `register answered ${reg.status} ${reg.text}`;

    // What the registered object holds after the change (an unlinked or replaced name leaves it).
    let size = OBJECT_BYTES;
    const t = c.tamper;
    if (t.kind === 'shrink') {
      fs.ftruncateSync(fd, t.to);
      size = t.to;
    } else if (t.kind === 'grow') {
      fs.ftruncateSync(fd, 2 * OBJECT_BYTES);
      size = 2 * OBJECT_BYTES;
    } else if (t.kind === 'unlink' || t.kind === 'replace') {
      fs.unlinkSync(file);
      // A different object under the same name, full of other numbers: the region must not see it.
      if (t.kind === 'replace') fs.writeFileSync(file, Buffer.alloc(t.size, 0x42));
    }

    const place = (name: keyof typeof AT): Placement => ({ region, offset: AT[name], byteSize: 16 });
    const inputs = {
      INPUT0: c.inputsInShm[0] ? place('INPUT0') : c.a,
      INPUT1: c.inputsInShm[1] ? place('INPUT1') : c.b,
    };
    const outputs = {
      OUTPUT0: c.outputsInShm[0] ? place('OUTPUT0') : undefined,
      OUTPUT1: c.outputsInShm[1] ? place('OUTPUT1') : undefined,
    };
    const ends = [
      ...(['INPUT0', 'INPUT1'] as const).filter((_, i) => c.inputsInShm[i]).map((k) => AT[k] + 16),
      ...(['OUTPUT0', 'OUTPUT1'] as const).filter((_, i) => c.outputsInShm[i]).map((k) => AT[k] + 16),
    ];
    const fits = ends.every((end) => end <= size);
    const got = await infer(c, inputs, outputs);

    if (!fits) {
      if (got.ok) return `answered although the object was shrunk to ${size} bytes`;
      if (!got.message.includes('was shrunk')) return `error does not name the shrink: ${got.message}`;
      return undefined;
    }
    if (!got.ok) return `failed although the object holds the bytes: ${got.message}`;
    const want = { OUTPUT0: c.a.map((x, i) => x + c.b[i]!), OUTPUT1: c.a.map((x, i) => x - c.b[i]!) };
    for (const [i, name] of (['OUTPUT0', 'OUTPUT1'] as const).entries()) {
      let values: number[] | undefined;
      if (c.outputsInShm[i]) {
        const bytes = Buffer.alloc(16);
        fs.readSync(fd, bytes, 0, 16, AT[name]);
        values = [...new Float32Array(bytes.buffer, bytes.byteOffset, 4)];
      } else values = got.outputs[name];
      if (JSON.stringify(values) !== JSON.stringify(want[name])) return `${name} is ${JSON.stringify(values)}, not ${JSON.stringify(want[name])}`;
    }
    return undefined;
  } finally {
    await call(httpPort, `/v2/systemsharedmemory/region/${region}/unregister`);
    fs.closeSync(fd);
    fs.rmSync(file, { force: true });
  }
}

/** Runs cases, a batch at a time; throws the first wrong answer with its case. */
export async function checkShmCases(runs: number, batch: number, httpPort: number, infer: Infer): Promise<void> {
  const out = await fc.check(
    fc.asyncProperty(fc.array(shmCase, { minLength: batch, maxLength: batch }), async (cases) => {
      const whys = await Promise.all(cases.map((c) => runShmCase(c, httpPort, infer)));
      const i = whys.findIndex((w) => w !== undefined);
      if (i >= 0) throw new Error(`${whys[i]} for ${JSON.stringify(cases[i])}`);
    }),
    { numRuns: runs, endOnFailure: true },
  );
  if (out.failed) throw new Error(`seed ${out.seed}, path ${out.counterexamplePath}: ${(out.errorInstance as Error | undefined)?.message}`);
}

/**
 * The usual-header reader against the JSON.parse path: every header it accepts must yield what
 * the general path builds from the same body, field for field, and every other form must be left
 * to the general path (undefined), so refusals keep one wording. No sockets here; the e2e suites
 * send these headers from perf_analyzer and tritonclient.
 */
import { describe, expect, it } from 'vitest';
import { readUsualInferHeader } from '../../src/frontends/http/infer-header-reader.js';
import { parseJsonInferRequest } from '../../src/frontends/http/infer-request.js';
import type { ParsedInferRequest } from '../../src/frontends/http/infer-plan.js';

/** A JSON+binary body with the header text as given (not re-serialised), and its header length. */
function body(header: string, ...blobs: Buffer[]): [Buffer, number] {
  const h = Buffer.from(header);
  return [Buffer.concat([h, ...blobs]), h.length];
}

const b64 = Buffer.alloc(64, 1);
const b8 = Buffer.alloc(8, 2);

/** perf_analyzer's header for add_sub (two INT32 [1,16] inputs, both outputs binary). */
const PERF_ANALYZER =
  '{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}},' +
  '{"name":"INPUT1","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}}],' +
  '"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}},{"name":"OUTPUT1","parameters":{"binary_data":true}}]}';

/**
 * The header read by hand equals the JSON path's result, and so do later requests with the same
 * bytes (the second is read again and kept, the third and fourth answered from the reader's
 * memo), each in objects of its own but the plan, which the memo's requests share.
 */
function expectSame(header: string, ...blobs: Buffer[]): void {
  const [buf, n] = body(header, ...blobs);
  const fast = readUsualInferHeader(buf, n, 'add_sub', '1');
  expect(fast, header).toBeDefined();
  expect(meaning(fast)).toEqual(meaning(parseJsonInferRequest(buf, n, 'add_sub', '1')));
  expectViews(fast!, buf, n);
  let previous = fast!;
  for (let k = 0; k < 3; k++) {
    const again = Buffer.from(buf);
    const next = readUsualInferHeader(again, n, 'add_sub', '1');
    expect(meaning(next), header).toEqual(meaning(parseJsonInferRequest(again, n, 'add_sub', '1')));
    expectViews(next!, again, n);
    expectNothingShared(previous, next!);
    expectNothingShared(fast!, next!);
    previous = next!;
  }
}

/**
 * What a parsed request means: the request, and the plan's output choices. A repeated header's
 * plan also carries its marker and the last response's kept JSON header (infer-response.ts),
 * which say how it is shared, not what the request asks.
 */
function meaning(parsed: ParsedInferRequest | undefined): unknown {
  if (parsed === undefined) return undefined;
  const { repeated: _r, lastResponse: _l, ...plan } = parsed.plan;
  return { request: parsed.request, plan };
}

/** Reads `buf`'s header twice, so that the reader keeps it (it keeps a header seen twice in a row). */
function remember(buf: Buffer, n: number, model = 'add_sub', version = '1'): void {
  expect(readUsualInferHeader(buf, n, model, version)).toBeDefined();
  expect(readUsualInferHeader(Buffer.from(buf), n, model, version)).toBeDefined();
}

/** Tensor bytes stay views of the body, in order. */
function expectViews(parsed: ParsedInferRequest, buf: Buffer, headerLength: number): void {
  let offset = headerLength;
  for (const t of parsed.request.inputs) {
    expect(t.data.buffer).toBe(buf.buffer);
    expect(t.data.byteOffset).toBe(buf.byteOffset + offset);
    offset += t.data.length;
  }
}

/** No object of one request's result is another's: the core may change what it was given. */
function expectNothingShared(a: ParsedInferRequest, b: ParsedInferRequest): void {
  expect(b.request).not.toBe(a.request);
  expect(b.request.parameters).not.toBe(a.request.parameters);
  expect(b.request.inputs).not.toBe(a.request.inputs);
  a.request.inputs.forEach((t, i) => {
    expect(b.request.inputs[i]).not.toBe(t);
    expect(b.request.inputs[i]!.shape).not.toBe(t.shape);
  });
  if (a.request.outputs !== undefined) {
    expect(b.request.outputs).not.toBe(a.request.outputs);
    a.request.outputs.forEach((o, i) => expect(b.request.outputs![i]!.parameters).not.toBe(o.parameters));
  }
  // The plan is the HTTP layer's, never the core's: a repeated header's requests share one,
  // which nothing changes per request (infer-plan.ts), and no other request has it.
  if (a.plan.repeated === true && b.plan.repeated === true) {
    expect(b.plan).toBe(a.plan);
  } else {
    expect(b.plan).not.toBe(a.plan);
    if (a.plan.requested !== undefined) expect(b.plan.requested).not.toBe(a.plan.requested);
  }
}

function expectLeft(header: string, ...blobs: Buffer[]): void {
  const [buf, n] = body(header, ...blobs);
  expect(readUsualInferHeader(buf, n, 'add_sub', '1'), header).toBeUndefined();
}

describe('the usual infer header, read by hand', () => {
  it("reads perf_analyzer's and tritonclient's headers as the JSON path does", () => {
    expectSame(PERF_ANALYZER, b64, b64);
    // tritonclient puts datatype before shape and may list no outputs.
    expectSame('{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[2],"parameters":{"binary_data_size":8}}]}', b8);
    expectSame(
      '{"id":"req-7","inputs":[{"name":"INPUT0","datatype":"FP32","shape":[2],"parameters":{"binary_data_size":8}}],' +
        '"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":false}}],"parameters":{"binary_data_output":true}}',
      b8,
    );
  });

  it('takes keys in any order, white space anywhere, empty shapes, lists and parameter objects', () => {
    expectSame(
      ' \n{ "parameters" : { } , "outputs" : [ { "parameters" : { } , "name" : "OUTPUT0" } , { "name" : "OUTPUT1" } ] ,\r\n' +
        '\t"inputs" : [ { "parameters" : { "binary_data_size" : 0 } , "shape" : [ ] , "datatype" : "BYTES" , "name" : "S" } ] } \n',
    );
    expectSame('{"inputs":[],"outputs":[]}');
    expectSame('{"inputs":[{"name":"a","datatype":"UINT8","shape":[999999999999999,0],"parameters":{"binary_data_size":0}}]}');
  });

  it('keeps the first entry of an output listed twice, as the JSON path does', () => {
    expectSame(
      '{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[2],"parameters":{"binary_data_size":8}}],' +
        '"outputs":[{"name":"O","parameters":{"binary_data":true}},{"name":"O","parameters":{"binary_data":false}}]}',
      b8,
    );
  });

  it('reads new names at the places it remembers, and after them the old ones again', () => {
    expectSame(PERF_ANALYZER, b64, b64);
    expectSame(PERF_ANALYZER.replaceAll('INPUT', 'IN_').replaceAll('INT32', 'FP32').replaceAll('OUTPUT', 'OUT'), b64, b64);
    expectSame(PERF_ANALYZER.replaceAll('INPUT', 'INPUX'), b64, b64);
    expectSame(PERF_ANALYZER, b64, b64);
  });

  it('leaves every other form to the JSON path', () => {
    const input = (fields: string) => `{"inputs":[{${fields}}]}`;
    const usual = '"name":"I","datatype":"FP32","shape":[2],"parameters":{"binary_data_size":8}';
    for (const [header, blobs] of [
      // data in JSON, shared memory, classification, other parameters
      [input('"name":"I","datatype":"FP32","shape":[2],"data":[1,2]'), []],
      [input('"name":"I","datatype":"FP32","shape":[2],"parameters":{"shared_memory_region":"r","shared_memory_byte_size":8}'), []],
      [`{"inputs":[{${usual}}],"outputs":[{"name":"O","parameters":{"classification":2}}]}`, [b8]],
      [`{"inputs":[{${usual}}],"parameters":{"priority":1}}`, [b8]],
      [`{"inputs":[{${usual}}],"parameters":{"binary_data_output":true,"x":1}}`, [b8]],
      [input('"name":"I","datatype":"FP32","shape":[2],"parameters":{"binary_data_size":8,"x":1}'), [b8]],
      // escapes, non-ASCII, control characters
      [input(usual.replace('"I"', '"I\\u0030"')), [b8]],
      [input(usual.replace('"I"', '"é"')), [b8]],
      [input(usual.replace('"I"', '"I\t"')), [b8]],
      [`{"id":"a\\"b","inputs":[{${usual}}]}`, [b8]],
      // numbers the reader does not take: sign, fraction, exponent, leading zero, 16 digits
      [input(usual.replace('[2]', '[-2]')), [b8]],
      [input(usual.replace('[2]', '[2.0]')), [b8]],
      [input(usual.replace('[2]', '[2e0]')), [b8]],
      [input(usual.replace('[2]', '[02]')), [b8]],
      [input(usual.replace('[2]', '[1000000000000000]')), [b8]],
      // other JSON kinds where the reader expects one
      [input(usual.replace('"FP32"', 'null')), [b8]],
      [`{"inputs":[{${usual}}],"outputs":[{"name":"O","parameters":{"binary_data":1}}]}`, [b8]],
      [`{"inputs":[{${usual}}],"id":7}`, [b8]],
      [`{"inputs":{}}`, []],
      // a datatype Triton does not know, a missing or duplicate field, an unknown key
      [input(usual.replace('FP32', 'FP33')), [b8]],
      [input('"name":"I","datatype":"FP32","parameters":{"binary_data_size":8}'), [b8]],
      [input(`${usual},"name":"J"`), [b8]],
      [`{"inputs":[{${usual}}],"inputs":[{${usual}}]}`, [b8, b8]],
      [`{"inputs":[{${usual}}],"model_name":"x"}`, [b8]],
      [`{"inputs":[{${usual}}],"__proto__":{}}`, [b8]],
      // broken or cut JSON, bytes after the document, trailing commas
      [`{"inputs":[{${usual}}]`, [b8]],
      [`{"inputs":[{${usual}}]}x`, [b8]],
      [`{"inputs":[{${usual}},]}`, [b8]],
      [`{"inputs":[{${usual}}],}`, [b8]],
      ['', []],
      // binary part too short, too long
      [input(usual), []],
      [input(usual), [b8, b8]],
    ] as [string, Buffer[]][]) {
      expectLeft(header, ...blobs);
    }
  });

  it('never reads past the header into the binary part', () => {
    // The header's last brace is missing; the blob that follows starts with one.
    const [buf] = body('{"inputs":[]', Buffer.from('}'));
    expect(readUsualInferHeader(buf, buf.length - 1, 'add_sub', '1')).toBeUndefined();
  });

  it('agrees with the JSON path on thousands of mutated headers: same result, or left to it', () => {
    // A fixed-seed generator (xorshift32), so a failure names a reproducible case.
    let seed = 0x2545f491;
    const rand = (n: number): number => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return (seed >>> 0) % n;
    };
    const alphabet = Buffer.from('{}[]:," \\\t\nfalsetru0123456789-.eEbIOx\u00e9');
    let accepted = 0;
    for (let k = 0; k < 3000; k++) {
      const h = Buffer.from(PERF_ANALYZER);
      const edits = 1 + rand(3);
      const bytes = [...h];
      for (let e = 0; e < edits; e++) {
        const at = rand(bytes.length);
        const c = alphabet[rand(alphabet.length)]!;
        const op = rand(3);
        if (op === 0) bytes[at] = c;
        else if (op === 1) bytes.splice(at, 0, c);
        else bytes.splice(at, 1);
      }
      const header = Buffer.from(bytes);
      const buf = Buffer.concat([header, b64, b64]);
      const fast = readUsualInferHeader(buf, header.length, 'add_sub', '1');
      if (fast === undefined) continue;
      accepted++;
      // What the reader accepts, the JSON path must accept too, with the same result.
      expect(meaning(fast), header.toString('latin1')).toEqual(meaning(parseJsonInferRequest(buf, header.length, 'add_sub', '1')));
    }
    // Some mutations keep the usual shape (white space, other digits or names): both paths saw them.
    expect(accepted).toBeGreaterThan(50);
  });
});

describe('a repeated header', () => {
  it('is read again when one byte differs, and the result follows the new bytes', () => {
    const [buf, n] = body(PERF_ANALYZER, b64, b64);
    remember(buf, n);
    const wider = PERF_ANALYZER.replaceAll('[1,16]', '[1,17]').replaceAll(':64}', ':68}');
    const [buf2, n2] = body(wider, Buffer.alloc(68, 3), Buffer.alloc(68, 4));
    const r = readUsualInferHeader(buf2, n2, 'add_sub', '1');
    expect(meaning(r)).toEqual(meaning(parseJsonInferRequest(buf2, n2, 'add_sub', '1')));
    expect(r!.request.inputs.map((t) => t.shape)).toEqual([
      [1, 17],
      [1, 17],
    ]);
    // Same length, one byte apart: INPUT1 renamed INPUT2.
    const renamed = PERF_ANALYZER.replace('"INPUT1"', '"INPUT2"');
    const [buf3, n3] = body(renamed, b64, b64);
    expect(readUsualInferHeader(buf3, n3, 'add_sub', '1')!.request.inputs[1]!.name).toBe('INPUT2');
  });

  it('names the model and version of its own request', () => {
    const [buf, n] = body(PERF_ANALYZER, b64, b64);
    remember(buf, n);
    const other = readUsualInferHeader(Buffer.from(buf), n, 'add_sub_copy', '2');
    expect(meaning(other)).toEqual(meaning(parseJsonInferRequest(buf, n, 'add_sub_copy', '2')));
    // A version of its own for the same model name is not answered from the other's memo.
    remember(buf, n, 'add_sub', '1');
    expect(meaning(readUsualInferHeader(Buffer.from(buf), n, 'add_sub', '2'))).toEqual(meaning(parseJsonInferRequest(buf, n, 'add_sub', '2')));
  });

  it('follows its own bytes when headers take turns, and when one of them then repeats', () => {
    const [a, na] = body(PERF_ANALYZER, b64, b64);
    const wider = PERF_ANALYZER.replaceAll('[1,16]', '[1,17]').replaceAll(':64}', ':68}');
    const [b, nb] = body(wider, Buffer.alloc(68, 3), Buffer.alloc(68, 4));
    // Taking turns, each read is a full read; every result still follows its own bytes.
    for (let k = 0; k < 6; k++) {
      const [buf, n] = k % 2 === 0 ? [a, na] : [b, nb];
      expect(meaning(readUsualInferHeader(Buffer.from(buf), n, 'turns', '1'))).toEqual(meaning(parseJsonInferRequest(buf, n, 'turns', '1')));
    }
    remember(a, na, 'turns');
    expect(meaning(readUsualInferHeader(Buffer.from(a), na, 'turns', '1'))).toEqual(meaning(parseJsonInferRequest(a, na, 'turns', '1')));
  });

  it('with a binary part of another length is left to the JSON path, which words the refusal', () => {
    const [buf, n] = body(PERF_ANALYZER, b64, b64);
    remember(buf, n);
    const [longer] = body(PERF_ANALYZER, b64, b64, Buffer.alloc(1));
    expect(readUsualInferHeader(longer, n, 'add_sub', '1')).toBeUndefined();
    const [shorter] = body(PERF_ANALYZER, b64, b8);
    expect(readUsualInferHeader(shorter, n, 'add_sub', '1')).toBeUndefined();
  });

  it('with an id is read each time (ids usually differ), and yields its id', () => {
    const header = '{"id":"a","inputs":[{"name":"INPUT0","datatype":"FP32","shape":[2],"parameters":{"binary_data_size":8}}]}';
    const [buf, n] = body(header, b8);
    expect(readUsualInferHeader(buf, n, 'add_sub', '1')!.request.id).toBe('a');
    const [buf2, n2] = body(header.replace('"a"', '"b"'), b8);
    expect(readUsualInferHeader(buf2, n2, 'add_sub', '1')!.request.id).toBe('b');
  });
});

/**
 * Where a Node server's CPU goes, by stage, from a profile of it under load: Linux `perf record
 * -e cpu-clock -g` of the whole process (node started with --perf-basic-prof and
 * --interpreted-frames-native-stack, so that JavaScript frames carry their function and file),
 * or, where perf cannot run, V8's own `--cpu-prof` of the main thread.
 *
 * perf is preferred: it samples CPU time (a thread is sampled only while it runs, in user or
 * kernel mode, every thread of the process). V8's profiler samples the main thread on a wall
 * clock, so on a small, busy host the time a thread waits for a core after a system call that
 * woke another process (a futex wake of the stub, a socket write that wakes the client) is
 * charged to that call as if it were CPU.
 *
 * Each sample is charged to one stage (classify below):
 * 1. GC when any frame is V8's collector (GC_FRAME);
 * 2. else, walking the stack from the leaf (the code running) towards the root, the first frame
 *    of the server's own code decides, by its file and, in the few files that do two stages'
 *    work, its function (STAGE_RULES): a sample inside `JSON.parse`, msgpackr, a socket write or
 *    the kernel belongs to the tritium function that called it. Frames of Node (`node:` URLs,
 *    the node binary), V8 builtins, protobuf-es, libc and the kernel are passed over; the addon
 *    (tritium_native.node: futex wakes, the wake eventfd) is IPC, but its HTTP/2 sessions and an
 *    answer's send(2) (WriteSocket) are read/parse or respond;
 * 3. else (an event that entered from libuv or nghttp2 and spent its time in Node's own code)
 *    the innermost frame named in NODE_FALLBACK: socket and HTTP/2 reads are read/parse; writes,
 *    trailers and stream teardown are respond;
 * 4. else "node internals" when there is JavaScript on the stack, "runtime (no JS frame)" when
 *    there is none (libuv's loop, epoll, timers), "other threads" off the main thread.
 * V8 profiles add their pseudo-frames: "(garbage collector)" is GC, "(program)" is runtime,
 * "(idle)" is left out.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

export const STAGES = ['read/parse', 'validate', 'schedule', 'IPC', 'respond', 'GC', 'runtime (no JS frame)', 'node internals', 'other threads'];

const ANY = /^/;

/**
 * [file regexp (URL), function regexp, stage], first match wins. Paths are dist/'s (the built
 * server) and bench/floor's (the floor servers).
 */
export const STAGE_RULES = [
  // --- frontends: HTTP
  [/\/frontends\/http\/wire\/connection\.js$/, /^responseDone$/, 'respond'],
  [/\/frontends\/http\/wire\/exchange\.js$/, /^(setHeader|writeHead|cork|uncork|write|end|onDrain)$/, 'respond'],
  [/\/frontends\/(http\/(infer-response|infer-response-stream|reply|json|compression)|classification)\.js$/, ANY, 'respond'],
  [/\/frontends\/http\//, ANY, 'read/parse'],
  // --- frontends: gRPC
  [/\/frontends\/grpc\/transport\/call\.js$/, /^(sendMessage|sendStatus|sendLast|#sendHeaders|write|end|errorTrailers|trailersOnlyHeaders)$/, 'respond'],
  [/\/frontends\/grpc\/transport\/h2-session\.js$/, /^(flush|answer|respond|write|end|scheduleFlush|close|goaway|ping|wantDrain)$/, 'respond'],
  [/\/frontends\/grpc\/service\.js$/, /^(answer|fail)$/, 'respond'],
  [/\/frontends\/grpc\/infer-codec\.js$/, /^(prepare|encode\w*|asBuffer)$/, 'respond'],
  [/\/frontends\/socket-write\.js$/, ANY, 'respond'],
  [/\/frontends\/grpc\/(response-wire|status)\.js$|\/frontends\/grpc\/transport\/(status|response-compression)\.js$/, ANY, 'respond'],
  [/\/frontends\/grpc\//, ANY, 'read/parse'],
  [/\/frontends\/(header-forward|body-budget|connection-limit|restricted-api)\.js$/, ANY, 'read/parse'],
  [/\/frontends\/metrics\//, ANY, 'schedule'],
  // --- core: validation, then the way to and from an instance with its bookkeeping
  [/\/core\/model\/model-version\.js$/, /^(complete|firstResponse)$/, 'schedule'],
  [
    /\/core\/(request\/(validate|parameters|shm-binding)|model\/(model-version|model-manager|model-entry)|server-core-impl|server-core|tensor|datatype|errors)\.js$/,
    ANY,
    'validate',
  ],
  [/\/core\/errors\//, ANY, 'validate'],
  [/\/core\//, ANY, 'schedule'],
  // --- the Python backend: sessions, the instance, the channel and its codec
  [/\/backends\/python\//, ANY, 'IPC'],
  [/\/node_modules\/msgpackr\//, ANY, 'IPC'],
  // --- the floor servers (bench/floor)
  [/\/bench\/floor\/http1\.mjs$/, ANY, 'read/parse'],
  [/\/bench\/floor\/(http|grpc)-floor\.mjs$/, /^(answer|answerCall|sendTrailers|statsAnswer)$/, 'respond'],
  [/\/bench\/floor\/(http|grpc)-floor\.mjs$/, ANY, 'read/parse'],
  [/\/bench\/floor\/ipc-driver\.mjs$/, ANY, 'IPC'],
];

/** Node's own functions (JavaScript or C++) that stand for a stage when no frame of the server's code is on the stack. */
export const NODE_FALLBACK = {
  'read/parse':
    /^(onStreamRead|onSessionHeaders|onConnection|onconnection|onSessionRead|addChunk|readableAddChunk\w*|push|emitReadable_?|flow|maybeReadMore_?|onread|onSettings)$|uv__read|uv__stream_io|uv__server_io|LibuvStreamWrap::OnUvRead|StreamBase::CallJSOnreadMethod|TCPWrap::OnConnection|nghttp2_session_mem_recv|nghttp2_session_on_|Http2Session::(OnStreamRead|OnHeaderCallback|OnBeginHeadersCallback|OnFrameReceive|OnDataChunkReceived|HandleHeadersFrame|HandleDataFrame|ConsumeHTTP2Data)/,
  respond:
    /^(writeGeneric|writevGeneric|handleWriteReq|afterWriteDispatched|onWriteComplete|afterWrite|afterWriteTick|_writeGeneric|_writev|_write|writeOrBuffer|onStreamTrailers|finishSendTrailers|sendTrailers|respond|onStreamClose|closeStream|finishCloseStream|_destroy|destroy|onStreamCloseRequest|afterShutdown|endWritableNT|finishMaybe|finish)$|uv__write|uv_try_write|uv__try_write|nghttp2_session_send|nghttp2_session_mem_send|Http2Session::(SendPendingData|MaybeScheduleWrite|OnStreamAfterWrite)|Http2Stream::(Destroy|SubmitResponse|SubmitTrailers|DoWrite)|StreamBase::Write|WriteWrap/,
};

/** Frames of V8's collector (perf); V8 profiles have the "(garbage collector)" pseudo-frame instead. */
const GC_FRAME =
  /^v8::internal::(Heap::|Scavenger|ScavengerCollector|MarkCompactCollector|MinorMarkCompactCollector|MinorMarkSweepCollector|ConcurrentMarking|IncrementalMarking|MarkingVisitor|MainMarkingVisitor|Sweeper|ArrayBufferSweeper|GCTracer|ScavengeJob|MemoryAllocator::Unmapper)/;

/** The stage of a frame of the server's own code (`url` set for JavaScript, `dso` for native), or undefined. */
function stageOfFrame(frame) {
  if (frame.dso?.endsWith('tritium_native.node')) {
    // The addon holds the gRPC transport's HTTP/2 sessions as well as the IPC primitives;
    // node-addon-api's inlined helpers (Napi::) are passed over so that their caller decides.
    if (frame.name.startsWith('Napi::')) return undefined;
    // An answer's send(2) (frontends/socket-write.ts); the addon keeps its frame pointers
    // (binding.gyp) so that a sample in the kernel under it still reaches this frame.
    if (frame.name.includes('WriteSocket')) return 'respond';
    if (!frame.name.includes('H2Session')) return 'IPC';
    return /H2Session::(Flush|Answer|Respond|Write|End|ReadData|Reset|Goaway|Ping|Queued|WantIo)/.test(frame.name) ? 'respond' : 'read/parse';
  }
  const url = frame.url;
  if (!url || url.startsWith('node:')) return undefined;
  if (url.includes('/node_modules/') && !url.includes('/node_modules/msgpackr/')) return undefined;
  for (const [file, fn, stage] of STAGE_RULES) if (file.test(url) && fn.test(frame.name)) return stage;
  return undefined;
}

function fallbackStage(frame) {
  if (frame.url && !frame.url.startsWith('node:')) return undefined;
  for (const [stage, names] of Object.entries(NODE_FALLBACK)) if (names.test(frame.name)) return stage;
  return undefined;
}

/** The stage of one sample's stack, leaf first: frames { name, url?, dso? } (see the module comment). */
export function classify(frames, mainThread = true) {
  if (frames.some((f) => GC_FRAME.test(f.name))) return 'GC';
  for (const f of frames) {
    const s = stageOfFrame(f);
    if (s) return s;
  }
  for (const f of frames) {
    const s = fallbackStage(f);
    if (s) return s;
  }
  if (!mainThread) return 'other threads';
  return frames.some((f) => f.url) ? 'node internals' : 'runtime (no JS frame)';
}

/** How a frame reads in the lists of top functions. */
function frameName(frame) {
  const where = frame.url ? frame.url.replace(/^.*\/(dist|node_modules|bench)\//, '$1/') : frame.dso ? frame.dso.replace(/^.*\//, '') : '(native)';
  return `${frame.name || '(anonymous)'} ${where}`;
}

/** The accumulator both front-ends fill: µs per stage, and per stage the functions with the most self time. */
function tally() {
  const byStage = Object.fromEntries(STAGES.map((s) => [s, 0]));
  const byFunction = new Map();
  return {
    byStage,
    add(stage, name, us) {
      byStage[stage] += us;
      const key = `${stage}\t${name}`;
      byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    },
    result(extra) {
      const top = Object.fromEntries(STAGES.map((s) => [s, []]));
      for (const [key, us] of [...byFunction].sort((a, b) => b[1] - a[1])) {
        const [stage, name] = key.split('\t');
        if (top[stage].length < 6) top[stage].push([name, us]);
      }
      const busyUs = Object.values(byStage).reduce((a, b) => a + b, 0);
      return { busyUs, byStage, top, ...extra };
    },
  };
}

// ---------------------------------------------------------------- perf

/** Whether `perf record -e cpu-clock` works here (installed, and allowed by perf_event_paranoid). */
export function perfAvailable() {
  const r = spawnSync('perf', ['record', '-q', '-e', 'cpu-clock', '-o', '/dev/null', '--', 'true'], { stdio: 'ignore', timeout: 20_000 });
  return r.status === 0;
}

/**
 * node flags of a server profiled with perf: a /tmp/perf-<pid>.map file that names JavaScript
 * frames (removed by removePerfMap), frames for interpreted code too, and no inlining by
 * TurboFan, without which an optimised function's callees vanish into it (the floor's socket
 * write then shows up inside its request framing). Without inlining the server costs somewhat
 * more: the shares are applied to the CPU per request measured without a profiler.
 */
export const PERF_NODE_ARGS = ['--perf-basic-prof', '--interpreted-frames-native-stack', '--no-turbo-inlining'];

export function removePerfMap(pid) {
  fs.rmSync(`/tmp/perf-${pid}.map`, { force: true });
}

const JS_SYMBOL = /^(?:JS|LazyCompile|Function):[*^~+]?(.*?) ?((?:file|node):\S*?)(?::\d+:\d+)?$/;
const FRAME_LINE = /^\s+[0-9a-f]+ (.*) \((.*)\)$/;

/**
 * CPU per stage of the perf.data `file` of process `pid` (run `perf script` while its
 * /tmp/perf-<pid>.map is still there): { busyUs, samples, byStage, top, method: 'perf' }.
 */
export function stageSplitPerf(file, pid) {
  const r = spawnSync('perf', ['script', '-i', file, '-F', 'tid,period,ip,sym,dso'], { encoding: 'utf8', maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error(`perf script -i ${file} failed: ${r.stderr}`);
  const t = tally();
  let samples = 0;
  let mainSamples = 0;
  for (const block of r.stdout.split('\n\n')) {
    const lines = block.split('\n').filter(Boolean);
    const head = /^\s*(\d+)\s+(\d+)\s*$/.exec(lines[0] ?? '');
    if (!head) continue;
    const tid = Number(head[1]);
    const us = Number(head[2]) / 1000;
    const frames = [];
    for (const line of lines.slice(1)) {
      const m = FRAME_LINE.exec(line);
      if (!m) continue;
      const [, sym, dso] = m;
      const js = JS_SYMBOL.exec(sym);
      frames.push(js ? { name: js[1], url: js[2], dso } : { name: sym.replace(/\+0x[0-9a-f]+$/, ''), dso });
    }
    const stage = classify(frames, tid === pid);
    // Named after the innermost frame outside the kernel, marked when the sample was in the kernel.
    const kernel = frames.length > 0 && frames[0].dso === '[kernel.kallsyms]';
    const user = frames.find((f) => f.dso !== '[kernel.kallsyms]');
    t.add(stage, `${kernel ? 'kernel < ' : ''}${user ? frameName(user) : '(kernel)'}`, us);
    samples++;
    if (tid === pid) mainSamples++;
  }
  return t.result({ samples, mainSamples, idleUs: 0, method: 'perf' });
}

// ---------------------------------------------------------------- V8 --cpu-prof

/**
 * Self time per stage of the main thread in the .cpuprofile `file`, samples taken between
 * `fromUs` and `toUs` (the profile's clock is CLOCK_MONOTONIC in µs, as process.hrtime):
 * { busyUs, idleUs, samples, byStage, top, method: 'v8' }.
 */
export function stageSplitV8(file, fromUs = -Infinity, toUs = Infinity) {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stageCache = new Map();
  const stageOf = (id) => {
    let s = stageCache.get(id);
    if (s !== undefined) return s;
    const leaf = nodes.get(id).callFrame.functionName;
    if (leaf === '(garbage collector)') s = 'GC';
    else if (leaf === '(program)') s = 'runtime (no JS frame)';
    else if (leaf === '(idle)') s = 'idle';
    else {
      const frames = [];
      for (let at = id; at !== undefined; at = parent.get(at)) {
        const cf = nodes.get(at).callFrame;
        if (cf.functionName !== '(root)') frames.push({ name: cf.functionName, url: cf.url });
      }
      s = classify(frames);
    }
    stageCache.set(id, s);
    return s;
  };
  const t = tally();
  let idleUs = 0;
  let samples = 0;
  let at = profile.startTime;
  const { samples: ids, timeDeltas } = profile;
  for (let i = 0; i < ids.length; i++) {
    at += timeDeltas[i];
    // A sample stands for the time until the next one.
    const dt = i + 1 < ids.length ? timeDeltas[i + 1] : 0;
    if (at < fromUs || at > toUs || dt <= 0) continue;
    const stage = stageOf(ids[i]);
    if (stage === 'idle') {
      idleUs += dt;
      continue;
    }
    samples++;
    const cf = nodes.get(ids[i]).callFrame;
    t.add(stage, frameName({ name: cf.functionName, url: cf.url }), dt);
  }
  return t.result({ samples, mainSamples: samples, idleUs, method: 'v8' });
}

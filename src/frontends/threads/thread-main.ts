/**
 * @module frontends/threads/thread-main
 * What a frontend thread runs: an HTTP server (frontends/http/) or a gRPC server
 * (frontends/grpc/) on the SO_REUSEPORT socket the main thread opened for it, talking to the
 * core through a RemoteCore. The server code is the same as on the main thread; only its core,
 * log and limits are the thread's views of the server's.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { configureTraceTags, TRACE_ENV } from '../../core/trace-tags.js';
import { isDescriptorShortage } from '../descriptor-watch.js';
import { CALL_TIMEOUT_S, RemoteCore } from './remote-core.js';
import { FrontendStatus } from './status.js';
import { THREAD_LABEL, type LifecycleMessage, type PoolMessage, type ThreadData } from './thread-data.js';

if (parentPort === null) throw new Error('frontends/threads/thread-main.js runs in a frontend thread only');
const port = parentPort;
const data = workerData as ThreadData;
const post = (m: LifecycleMessage): void => port.postMessage(m);
const status = new FrontendStatus(data.status);
const core = new RemoteCore({ toMain: data.toMain, toThread: data.toThread, objects: data.objectPort }, data.callPort, new Int32Array(data.callFlag), status);
const log = (level: 'info' | 'warn' | 'error' | 'verbose') => (line: string) => post({ t: 'log', level, line });
// The main thread warned about unknown tags already; this thread only needs its flags.
configureTraceTags(
  process.env[TRACE_ENV],
  { info: () => {}, warn: () => {}, verbose: (_level: number, line: string) => log('verbose')(line) },
  { label: `${THREAD_LABEL[data.kind]} thread ${data.index}`, numbers: status.traceNumbers },
);
const asked = new Map<number, (evicted: boolean) => void>();
let nextAsk = 1;

const own = {
  fd: data.fd,
  shared: data.shared,
  logger: { info: log('info'), warn: log('warn'), error: log('error') },
  logSettings: core.logSettings,
  evictElsewhere: (olderThan: number) =>
    new Promise<boolean>((resolve) => {
      const id = nextAsk++;
      asked.set(id, resolve);
      post({ t: 'evict-ask', id, olderThan });
    }),
  descriptors: {
    report(err: unknown): boolean {
      if (!isDescriptorShortage(err)) return false;
      post({ t: 'descriptors', code: (err as NodeJS.ErrnoException).code! });
      return true;
    },
  },
};
// Only the kind this thread serves is loaded.
const server: { close(): Promise<void>; evictIdle?(olderThan: number): boolean } =
  data.kind === 'http'
    ? await (await import('../http/server.js')).startHttpServer(core, { ...data.options, ...own })
    : await (await import('../grpc/server.js')).startGrpcServer(core, { ...data.options, ...own });

port.on('message', (m: PoolMessage) => {
  if (m.t === 'close') {
    // 'quiesced' promises the main thread that every request read so far is in the ring.
    if (!core.flush())
      post({ t: 'log', level: 'error', line: `${THREAD_LABEL[data.kind]} thread ${data.index}: the main thread took no requests for ${CALL_TIMEOUT_S} s` });
    post({ t: 'quiesced' });
    void server.close().then(() => post({ t: 'closed' }));
  } else if (m.t === 'evict-one') {
    post({ t: 'evict-done', id: m.id, evicted: server.evictIdle?.(m.olderThan) ?? false });
  } else if (m.t === 'evict-answer') {
    asked.get(m.id)?.(m.evicted);
    asked.delete(m.id);
  } else {
    // Only the main thread posts here: anything else is a bug, and the thread is replaced.
    throw new Error(`frontend thread: unknown message '${(m as { t?: unknown }).t}'`);
  }
});
post({ t: 'listening' });

/**
 * @module frontends/threads/thread-data
 * What the main thread gives a frontend thread at its start, and the messages about the thread
 * itself and its connections that travel beside the core's (wire.ts). Kept apart from
 * thread-main.ts, which runs as soon as it is imported.
 */
import type { MessagePort } from 'node:worker_threads';
import type { GrpcServerOptions } from '../grpc/server.js';
import type { HttpServerOptions } from '../http/server.js';
import type { SharedFrontendMemory } from '../shared-limits.js';

/** What lives on the main thread, or is the thread's own, rather than in the options it is given. */
type ThreadOwn = 'logger' | 'logSettings' | 'descriptors' | 'fd' | 'shared' | 'evictElsewhere';

/** Which server a thread runs, with that server's options. */
export type ThreadServer = { kind: 'http'; options: Omit<HttpServerOptions, ThreadOwn> } | { kind: 'grpc'; options: Omit<GrpcServerOptions, ThreadOwn> };

/** What the main thread gives each frontend thread. */
export type ThreadData = ThreadServer & {
  /** Its number among the server's threads of that kind (log and trace lines). */
  index: number;
  fd: number;
  shared: SharedFrontendMemory;
  status: SharedArrayBuffer;
  /** Requests and the thread's notices go to the main thread on this ring (record-ring.ts). */
  toMain: SharedArrayBuffer;
  /** Responses come back on this one. */
  toThread: SharedArrayBuffer;
  /** What the records do not carry, in both directions (outbox.ts). */
  objectPort: MessagePort;
  callFlag: SharedArrayBuffer;
  callPort: MessagePort;
};

/** One side's view of a thread's link: the ring each way and its end of the object port (outbox.ts, inbox.ts). */
export interface ThreadLink {
  toMain: SharedArrayBuffer;
  toThread: SharedArrayBuffer;
  objects: MessagePort;
}

/** How log and trace lines name a kind of frontend thread. */
export const THREAD_LABEL = { http: 'HTTP', grpc: 'gRPC' } as const;

/** Thread → main messages about the thread and its connections, beside the core's (wire.ts). */
export type LifecycleMessage =
  | { t: 'listening' }
  | { t: 'log'; level: 'info' | 'warn' | 'error' | 'verbose'; line: string }
  | { t: 'descriptors'; code: string }
  /**
   * First answer to 'close': every request the thread read before it has been posted (so the
   * main thread has received them); what it reads from now on reaches a server that exits.
   */
  | { t: 'quiesced' }
  | { t: 'closed' }
  /** At the connection limit with no idle connection: may another thread close one? */
  | { t: 'evict-ask'; id: number; olderThan: number }
  /** Answer to 'evict-one'. */
  | { t: 'evict-done'; id: number; evicted: boolean };

/** Main → thread, beside the core's. */
export type PoolMessage = { t: 'close' } | { t: 'evict-one'; id: number; olderThan: number } | { t: 'evict-answer'; id: number; evicted: boolean };

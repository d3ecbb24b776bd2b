/**
 * @module frontends/grpc/transport/http2-server
 * gRPC over HTTP/2 (plaintext with prior knowledge, or TLS with ALPN `h2`), without a gRPC
 * library in between; the connections are h2-session.ts's, over Node's nghttp2. The path picks
 * a route, the body is cut into messages, the route's handler answers through a call object.
 * Kept deliberately small: unary and bidirectional streaming calls, identity /
 * gzip / deflate request messages, `grpc-timeout` deadlines, client cancellation, message
 * size limits, graceful shutdown. Why not @grpc/grpc-js: see docs/design.md ("gRPC transport").
 */
import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { H2Session, type H2Headers, type H2Stream } from './h2-session.js';
import type { ConnectionLimit, LimitedConnection } from '../../connection-limit.js';
import { DuplexCall, UnaryCall, errorTrailers, trailersOnlyHeaders, type CallObserver } from './call.js';
import { BidiReading, UnaryReading, type ArrivingCount, type ReadingSetup, type Route } from './call-reading.js';
import { algorithmFor, type CompressionLevel } from './response-compression.js';
import { KEEPALIVE_DEFAULTS, superviseSession, type KeepaliveOptions, type SessionKeepalive } from './keepalive.js';
import type { BodyBudget } from '../../body-budget.js';
import { BodyHold } from './body-hold.js';
import { ReadWatch } from './read-watch.js';
import { MessageReader } from './message-reader.js';
import { Metadata, parseTimeoutMs } from './metadata.js';
import { GrpcStatus, StatusError } from './status.js';
import { traceLine, traceTags } from '../../../core/trace-tags.js';

export type { BidiRoute, Route, UnaryRoute } from './call-reading.js';

/**
 * The routes by path, or a loader of them that runs once, when the first connection arrives:
 * the routes of a service are built from its generated descriptors and handlers, which a
 * server that never gets a gRPC call need not load (docs/design.md, "gRPC transport"). Calls
 * that arrive while it runs wait for it, their request bytes held back by flow control.
 */
export type RouteSource = ReadonlyMap<string, Route> | (() => Promise<ReadonlyMap<string, Route>>);

export interface TransportOptions {
  maxMessageBytes: number;
  /** Connections (HTTP/2 sessions) kept open; see frontends/connection-limit.ts. */
  connectionLimit?: ConnectionLimit;
  /** A frontend thread at the limit asks the other threads to close an idle session (ConnectionLimit.decide). */
  evictElsewhere?: (olderThan: number) => Promise<boolean>;
  /**
   * Calls one connection may have open at once (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS,
   * `--grpc-max-concurrent-streams`); a gRPC client queues calls beyond it, and one that does
   * not gets REFUSED_STREAM. Default DEFAULT_MAX_CONCURRENT_STREAMS.
   */
  maxConcurrentStreams?: number;
  /** Request messages that stop arriving end their call after this long (read-watch.ts); undefined = no bound. */
  readTimeoutMs?: number;
  /** The frontend's body budget; calls whose messages span chunks reserve them here (body-hold.ts). */
  bodyBudget?: BodyBudget;
  /** A new call is refused with this status while set (server shutting down). */
  refuseWith(): StatusError | undefined;
  /** Keepalive and ping policy per connection (tritonserver's defaults when absent). */
  keepalive?: KeepaliveOptions;
  /** `--grpc-infer-response-compression-level` for the routes that allow it. */
  responseCompression?: CompressionLevel;
  /** A status refusing a call to `path` with these headers (`--grpc-restricted-protocol`), or undefined. */
  restrict?(path: string, headers: H2Headers): StatusError | undefined;
  /** TLS (`--grpc-use-ssl`); with `mutual`, clients must present a certificate `ca` signed. */
  tls?: TlsOptions;
}

export interface TlsOptions {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer;
  mutual: boolean;
}

export interface Transport {
  /** The listening socket's server (plain TCP, or TLS offering ALPN `h2`). */
  server: Server;
  /** Calls started and not yet ended. */
  readonly active: number;
  /** Called whenever `active` drops to 0. */
  onIdle: (() => void) | undefined;
  /** GOAWAY to every connection; resolves when they have closed or `forceAfterMs` passed. */
  close(forceAfterMs: number): Promise<boolean>;
  /** Closes the oldest idle session if it was opened before `olderThan` (epoch ms): another thread is at the limit. */
  evictIdle(olderThan: number): boolean;
}

/** Node's default is unlimited (2^32 - 1): one connection could hold any number of calls. */
export const DEFAULT_MAX_CONCURRENT_STREAMS = 1024;

/** Stream flow-control window: most requests arrive without waiting for a window update. */
const STREAM_WINDOW = 1024 * 1024;
/** Session flow-control window: a 20 MiB request need not wait for a window update every 64 KiB. */
const SESSION_WINDOW = 16 * 1024 * 1024;

export function createTransport(source: RouteSource, opts: TransportOptions): Transport {
  let routes = typeof source === 'function' ? undefined : source;
  let loading: Promise<ReadonlyMap<string, Route>> | undefined;
  const loadRoutes = (): Promise<ReadonlyMap<string, Route>> => {
    if (typeof source !== 'function') return Promise.resolve(source);
    loading ??= source().then(
      (loaded) => (routes = loaded),
      (err: unknown) => {
        loading = undefined; // the next call tries again
        throw err;
      },
    );
    return loading;
  };
  const connections = new Set<Connection>();
  const reads = opts.readTimeoutMs ? new ReadWatch(opts.readTimeoutMs) : undefined;
  let active = 0;
  const settings = {
    maxConcurrentStreams: opts.maxConcurrentStreams ?? DEFAULT_MAX_CONCURRENT_STREAMS,
    initialWindowSize: STREAM_WINDOW,
    sessionWindow: SESSION_WINDOW,
  };
  const t: Transport = {
    server: opts.tls
      ? createTlsServer({
          cert: opts.tls.cert,
          key: opts.tls.key,
          ...(opts.tls.ca ? { ca: opts.tls.ca } : {}),
          requestCert: opts.tls.mutual,
          rejectUnauthorized: opts.tls.mutual,
          ALPNProtocols: ['h2'],
        })
      : createServer(), // each connection's H2Session sets TCP_NODELAY, TLS or not
    get active() {
      return active;
    },
    onIdle: undefined,
    close: (forceAfterMs) => {
      reads?.stop();
      return closeAll(t.server, connections, forceAfterMs);
    },
    evictIdle: (olderThan) => opts.connectionLimit?.evictIdle(limited(), olderThan) ?? false,
  };
  const onCallEnd = (): void => {
    if (--active === 0) t.onIdle?.();
  };
  // Insertion order is age: the oldest session with no request in flight makes room at the limit.
  function* limited(): Generator<LimitedConnection> {
    for (const c of connections) {
      const busy = c.ka.openCalls - c.arriving;
      // A destroyed session stays in the set until its 'close' event; it is not there to evict.
      yield { idle: busy <= 0 && !c.session.destroyed, openedAt: c.openedAt, evict: () => c.session.destroy() };
    }
  }
  const connected = (socket: Socket): void => {
    const session = new H2Session(socket, settings);
    // The keepalive policy from the start: calls may arrive before the connection is admitted.
    const conn = new Connection(session, superviseSession(session, opts.keepalive ?? KEEPALIVE_DEFAULTS), onCallEnd);
    session.onStream = (stream, headers) => onStream(conn, stream, headers);
    const limit = opts.connectionLimit;
    if (limit === undefined) return admitted(conn);
    // A frontend thread may ask the other threads first; calls wait for the answer.
    limit.decide(limited, connections.size, opts.evictElsewhere, (ok) => {
      if (ok && !session.destroyed) return admitted(conn);
      if (ok) limit.closed();
      session.destroy();
    });
  };
  if (opts.tls) {
    t.server.on('secureConnection', (socket: TLSSocket) => {
      // gRPC over TLS is HTTP/2 chosen by ALPN; a client that did not choose it is not speaking gRPC.
      if (socket.alpnProtocol !== 'h2') socket.destroy();
      else connected(socket);
    });
    t.server.on('tlsClientError', () => {}); // a failed handshake concerns that client only
  } else {
    t.server.on('connection', connected);
  }
  function admitted(conn: Connection): void {
    const session = conn.session;
    if (traceTags.grpc) traceSession(session);
    connections.add(conn);
    conn.openedAt = Date.now();
    session.once('close', () => {
      connections.delete(conn);
      opts.connectionLimit?.closed();
    });
    // Load the routes while the client is still sending its preface and first call.
    if (routes === undefined) loadRoutes().catch(() => {}); // a call that needs them reports the failure
    session.start();
  }
  function onStream(conn: Connection, stream: H2Stream, headers: H2Headers): void {
    if (routes !== undefined) {
      startCall(routes, conn, stream, headers);
      return;
    }
    // Calls queue behind the load in arrival order; one the client gave up on meanwhile is dropped.
    loadRoutes().then(
      (loaded) => {
        if (!stream.destroyed) startCall(loaded, conn, stream, headers);
      },
      (err: unknown) =>
        respondTrailersOnly(
          stream,
          new StatusError(GrpcStatus.INTERNAL, `The gRPC service failed to load: ${err instanceof Error ? err.message : String(err)}`),
        ),
    );
  }
  function startCall(table: ReadonlyMap<string, Route>, conn: Connection, stream: H2Stream, headers: H2Headers): void {
    const refusal = checkRequest(table, headers) ?? opts.refuseWith() ?? opts.restrict?.(headers[':path'] as string, headers);
    if (refusal !== undefined) {
      if (traceTags.grpc) {
        const why = typeof refusal === 'number' ? `HTTP ${refusal}` : `status ${refusal.code}: ${refusal.details}`;
        traceLine('grpc', `conn ${sessionIds.get(stream.session) ?? 0} stream ${stream.id}: ${String(headers[':path'])} refused (${why})`);
      }
      if (typeof refusal === 'number') respondHttpError(stream, refusal);
      else respondTrailersOnly(stream, refusal);
      return;
    }
    const route = table.get(headers[':path'] as string)!;
    active++;
    conn.ka.callStarted();
    const metadata = new Metadata(headers);
    const call = route.kind === 'unary' ? new UnaryCall(stream, metadata, conn) : new DuplexCall(stream, metadata, conn);
    if (traceTags.grpc) {
      call.connectionId = sessionIds.get(stream.session) ?? 0;
      const deadline = headers['grpc-timeout'] === undefined ? '' : `, grpc-timeout ${String(headers['grpc-timeout'])}`;
      traceLine('grpc', `${call.traceName}: call ${headers[':path'] as string}${deadline}`);
    }
    if (route.compressResponses && opts.responseCompression) call.compression = algorithmFor(opts.responseCompression, headers['grpc-accept-encoding']);
    const timeout = parseTimeoutMs(headers['grpc-timeout']);
    if (timeout !== undefined) call.setDeadline(timeout);
    const setup: ReadingSetup = {
      encoding: (headers['grpc-encoding'] as string | undefined) ?? 'identity',
      reader: new MessageReader(opts.maxMessageBytes),
      hold: opts.bodyBudget ? new BodyHold(stream, opts.bodyBudget, route.kind === 'unary') : undefined,
      arrivals: route.kind === 'unary' ? conn : undefined,
      reads,
    };
    if (route.kind === 'unary') {
      stream.handler = new UnaryReading(stream, call as UnaryCall, route, setup);
    } else {
      stream.handler = new BidiReading(stream, call as DuplexCall, route, setup);
      route.run(call as DuplexCall);
    }
    stream.resume();
  }
  return t;
}

/** Numbers of the connections (debug trace lines, core/trace-tags.ts); kept only while the `grpc` tag is on. */
const sessionIds = new WeakMap<H2Session, number>();
let nextSessionId = 1;

function traceSession(session: H2Session): void {
  const id = nextSessionId++;
  sessionIds.set(session, id);
  const socket = session.socket;
  traceLine('grpc', `conn ${id}: opened from ${socket?.remoteAddress}:${socket?.remotePort}`);
  session.once('close', () => traceLine('grpc', `conn ${id}: closed`));
}

/** An HTTP status for a request that is not gRPC, a gRPC status for one we cannot serve. */
function checkRequest(routes: ReadonlyMap<string, Route>, headers: H2Headers): number | StatusError | undefined {
  if (headers[':method'] !== 'POST') return 405;
  const type = headers['content-type'];
  if (typeof type !== 'string' || !type.startsWith('application/grpc')) return 415;
  const path = headers[':path'] as string;
  if (!routes.has(path)) return new StatusError(GrpcStatus.UNIMPLEMENTED, `The server does not implement the method ${path}`);
  const encoding = headers['grpc-encoding'];
  if (encoding !== undefined && encoding !== 'identity' && encoding !== 'gzip' && encoding !== 'deflate') {
    return new StatusError(GrpcStatus.UNIMPLEMENTED, `Compression algorithm '${String(encoding)}' is not supported (identity, gzip, deflate)`);
  }
  return undefined;
}

function respondHttpError(stream: H2Stream, status: number): void {
  stream.respond([':status', String(status)], false);
  stream.discard(); // the request body, if any, is not wanted
}

function respondTrailersOnly(stream: H2Stream, status: StatusError): void {
  if (stream.destroyed) return;
  stream.respond(trailersOnlyHeaders(errorTrailers(status)), false);
  stream.discard(); // the request body, if any, is not wanted
}

function closeAll(server: Server, connections: Set<Connection>, forceAfterMs: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    let done = false;
    const timer = setTimeout(() => {
      if (done) return;
      done = true;
      for (const c of connections) c.session.destroy();
      resolve(false);
    }, forceAfterMs);
    server.close(() => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(true);
    });
    // GOAWAY: the client opens no new stream here, the ones open may finish.
    for (const c of connections) c.session.close();
  });
}

/**
 * The transport's record of one connection: what its calls tell (CallObserver: ends, messages
 * written) goes to its keepalive policy and the server's count of calls in flight, and the
 * connection limit reads its calls from here.
 */
class Connection implements CallObserver, ArrivingCount {
  /**
   * Unary calls whose request message is still arriving: like an HTTP request head, they hold
   * no request yet, so they do not keep the connection from being evicted (a client that opens
   * calls and sends nothing would otherwise keep its slot until the read timeout).
   */
  arriving = 0;
  /** When it was admitted (epoch ms). */
  openedAt = 0;

  constructor(
    readonly session: H2Session,
    readonly ka: SessionKeepalive,
    private readonly onCallEnd: () => void,
  ) {}

  callEnded(): void {
    this.ka.callEnded();
    this.onCallEnd();
  }

  sentData(): void {
    this.ka.sentData();
  }
}

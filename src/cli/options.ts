/**
 * @module cli/options
 * tritonserver's command-line flags, so `tritonserver` can be swapped for `tritium` in scripts.
 * Parsing is done by commander; this file owns the flag list and the value checks, and builds
 * the server's `ServerOptions` (server-options.ts). `--backend-config` entries are checked for
 * their `<backend>,<key>=<value>` shape only and passed on as given: each backend reads its own
 * keys (backends/python/options.ts, backends/onnx/backend.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { TRITIUM_VERSION, TRITON_API_VERSION } from '../core/version.js';
import { KEEPALIVE_DEFAULTS } from '../frontends/grpc/transport/keepalive.js';
import { INERT_FLAGS, inertWarning, type InertFlag } from './inert-flags.js';
import { nearestFlag } from './nearest-flag.js';
import { defaultFrontendThreads } from '../frontends/threads/thread-count.js';
import { headerPattern } from '../frontends/header-forward.js';
import { parseRestrictions, type ApiGroup, type Restriction } from '../frontends/restricted-api.js';
import { OPENAI_API_GROUPS, type OpenAiApiGroup } from '../frontends/openai/routes.js';
import { ChatTemplate } from '../frontends/openai/chat-template.js';
import { traceSettingsFromFlags, type TraceSettings } from '../core/extensions/trace-settings.js';
import { DEFAULT_BACKEND_DIRECTORY } from '../core/model/backend-resolution.js';
import type { RateLimitResource } from '../core/scheduling/rate-limiter.js';
import { OptionsError, type ServerOptions } from '../server-options.js';
import { parseHostPolicy, resolveHostPolicies, type HostPolicyEntry } from './host-policy.js';
import type { SummaryQuantile } from '../frontends/metrics/latency-families.js';

const MIB = 1024 * 1024;

function parseBool(flag: string) {
  return (v: string): boolean => {
    const s = v.toLowerCase();
    if (['true', '1', 'yes', 'on'].includes(s)) return true;
    if (['false', '0', 'no', 'off'].includes(s)) return false;
    throw new InvalidArgumentError(`${flag} expects true or false, got '${v}'.`);
  };
}

function parseInteger(flag: string, min: number, max = Number.MAX_SAFE_INTEGER) {
  return (v: string): number => {
    if (!/^-?\d+$/.test(v.trim())) throw new InvalidArgumentError(`${flag} expects an integer, got '${v}'.`);
    const n = Number(v);
    if (n < min || n > max) throw new InvalidArgumentError(`${flag} must be between ${min} and ${max}, got ${n}.`);
    return n;
  };
}

const port = (flag: string) => parseInteger(flag, 0, 65535);

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** `--backend-config=<backend>,<key>=<value>`; an empty backend means a global setting. */
function parseBackendConfig(value: string, previous: Array<[string, string, string]> | undefined) {
  const m = /^([^,=]*),([^=]+)=(.*)$/.exec(value);
  const global = /^([^,=]+)=(.*)$/.exec(value);
  let entry: [string, string, string];
  if (m) entry = [m[1]!, m[2]!, m[3]!];
  else if (global) entry = ['', global[1]!, global[2]!];
  else throw new InvalidArgumentError(`--backend-config expects <backend>,<setting>=<value>, got '${value}'.`);
  return [...(previous ?? []), entry];
}

/** `--cache-config=<cache>,<key>=<value>` (tritonserver's texts for a malformed one). */
function parseCacheConfig(value: string, previous: Array<[string, string, string]> | undefined) {
  const comma = value.indexOf(',');
  if (comma < 0) throw new InvalidArgumentError(`No cache specified. --cache-config option format is <cache name>,<setting>=<value>. Got ${value}`);
  const setting = /^([^=]+)=(.*)$/.exec(value.slice(comma + 1));
  if (comma === 0 || !setting) throw new InvalidArgumentError(`--cache-config option format is '<cache name>,<setting>=<value>'. Got ${value}`);
  return [...(previous ?? []), [value.slice(0, comma), setting[1]!, setting[2]!] as [string, string, string]];
}

/** `--rate-limit-resource=<name>:<count>[:<device>]`, with tritonserver's texts. */
function parseRateLimitResource(value: string, previous: RateLimitResource[] | undefined): RateLimitResource[] {
  const parts = value.split(':');
  if (parts.length !== 2 && parts.length !== 3) {
    throw new InvalidArgumentError(`--rate-limit-resource option format is '<resource_name>:<count>:<device>' or '<resource_name>:<count>'. Got ${value}`);
  }
  const int = (v: string): number => {
    if (!/^-?\d+$/.test(v)) throw new InvalidArgumentError(`Invalid option value. Got ${v}`);
    return Number(v);
  };
  const entry = { name: parts[0]!, count: int(parts[1]!), device: parts.length === 3 ? int(parts[2]!) : -1 };
  const list = [...(previous ?? [])];
  // The same name and device twice: the smaller count holds (as tritonserver).
  const same = list.findIndex((r) => r.name === entry.name && r.device === entry.device);
  if (same >= 0) list[same] = { ...entry, count: Math.min(entry.count, list[same]!.count) };
  else list.push(entry);
  return list;
}

/** The response cache's size in bytes from --cache-config / --response-cache-byte-size, or undefined without one. */
function cacheSize(entries: Array<[string, string, string]> | undefined, byteSize: number | undefined): number | undefined {
  if (entries !== undefined && byteSize !== undefined) {
    throw new OptionsError('Error: Incompatible flags --response-cache-byte-size and --cache-config both provided. Please provide one or the other.');
  }
  if (byteSize !== undefined) entries = [['local', 'size', String(byteSize)]];
  if (entries === undefined) return undefined;
  const names = new Set(entries.map((e) => e[0]));
  if (names.size > 1) throw new OptionsError('found multiple cache configurations, but only a single cache is currently supported');
  const [name] = names;
  if (name !== 'local')
    throw new OptionsError(`--cache-config: tritium has only the local cache built in; '${name}' (a cache library of --cache-directory) is not supported`);
  const size = entries.find((e) => e[1] === 'size')?.[2];
  if (size === undefined || !/^\d+$/.test(size) || Number(size) < 1024) {
    throw new OptionsError("Failed to initialize LocalCache: config didn't contain a valid 'size' field.");
  }
  return Number(size);
}

/** An enum flag: tritonserver compares the value case-insensitively (`POLL`, `Explicit`). */
function parseChoice<T extends string>(flag: string, choices: readonly T[]) {
  return (v: string): T => {
    const found = choices.find((c) => c.toLowerCase() === v.toLowerCase());
    if (found === undefined) throw new InvalidArgumentError(`${flag} expects one of ${choices.join(', ')}, got '${v}'.`);
    return found;
  };
}

/** `--metrics-config=<setting>=<value>` (repeatable). */
function parseSetting(flag: string) {
  return (value: string, previous: Array<[string, string]> | undefined): Array<[string, string]> => {
    const m = /^([^=]+)=(.*)$/.exec(value);
    if (!m) throw new InvalidArgumentError(`${flag} expects <setting>=<value>, got '${value}'.`);
    return [...(previous ?? []), [m[1]!, m[2]!]];
  };
}

function parseFloatFlag(flag: string, min: number) {
  return (v: string): number => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n)) throw new InvalidArgumentError(`${flag} expects a number, got '${v}'.`);
    if (n < min) throw new InvalidArgumentError(`${flag} must be at least ${min}, got ${n}.`);
    return n;
  };
}

/** `--trace-config [<mode>,]<setting>=<value>` (repeatable): [mode, setting, value]. */
function parseTraceConfig(value: string, previous: Array<[string, string, string]> | undefined): Array<[string, string, string]> {
  const m = /^(?:(triton|opentelemetry),)?([^,=]+)=(.*)$/.exec(value);
  if (!m) throw new InvalidArgumentError(`--trace-config expects [triton|opentelemetry,]<setting>=<value>, got '${value}'.`);
  const [, mode = '', key, v] = m as unknown as [string, string | undefined, string, string];
  if (mode === '' && key === 'level' && !['OFF', 'TIMESTAMPS', 'TENSORS'].includes(v.toUpperCase())) {
    throw new InvalidArgumentError(`--trace-config level expects OFF, TIMESTAMPS or TENSORS, got '${v}'.`);
  }
  if (((mode === '' && (key === 'rate' || key === 'count')) || (mode === 'triton' && key === 'log-frequency')) && !/^-?\d+$/.test(v)) {
    throw new InvalidArgumentError(`--trace-config ${mode ? `${mode},` : ''}${key} expects an integer, got '${v}'.`);
  }
  return [...(previous ?? []), [mode, key, v]];
}

/** The value checks of an inert flag: its type as tritonserver parses it, nothing more. */
function inertParser(f: InertFlag) {
  const check =
    f.value === 'integer'
      ? parseInteger(f.flag, Number.MIN_SAFE_INTEGER)
      : f.value === 'boolean'
        ? parseBool(f.flag)
        : f.value === 'float'
          ? parseFloatFlag(f.flag, -Infinity)
          : (v: string) => v;
  return (v: string, previous: string[] | undefined): string[] => {
    check(v);
    return [...(previous ?? []), v];
  };
}

/** tritonserver's `--help` groups, in its order (tritium's own flags go with the group they belong to). */
const G = {
  server: 'Server:',
  logging: 'Logging:',
  repository: 'Model Repository:',
  http: 'HTTP:',
  grpc: 'GRPC:',
  sagemaker: 'Sagemaker:',
  vertex: 'Vertex:',
  metrics: 'Metrics:',
  tracing: 'Tracing:',
  backend: 'Backend:',
  repoagent: 'Repository Agent:',
  cache: 'Response Cache:',
  rateLimiter: 'Rate Limiter:',
  openai: 'OpenAI:',
  memory: 'Memory/Device Management:',
  deprecated: 'DEPRECATED:',
} as const;

export function buildCommand(): Command {
  const cmd = new Command('tritium')
    .description('Serve a Triton model repository (Python-backend and ONNX models) over KServe v2 HTTP and gRPC.')
    .allowExcessArguments(false)
    .showHelpAfterError(false)
    .showSuggestionAfterError(true)
    .helpOption('--help', 'print usage')
    .version(`tritium ${TRITIUM_VERSION} (tritonserver's command line; reports Triton API version ${TRITON_API_VERSION})`, '--version', 'print the version')
    .addHelpText(
      'after',
      "\nOther command:\n  tritium install-cuda   installs onnxruntime-node's CUDA execution provider from PyPI (tritium install-cuda --help)",
    );
  const add = (group: string, o: Option) => cmd.addOption(o.helpGroup(group));
  const inert = new Map(INERT_FLAGS.map((f) => [f.flag, f]));
  const addInert = (flag: string) => {
    const f = inert.get(flag)!;
    add(`${f.group}:`, new Option(`${f.flag} ${f.placeholder ?? `<${f.value}>`}`, `accepted, no effect: ${f.why}`).argParser(inertParser(f)));
  };
  const inertIn = (group: string) => {
    for (const f of INERT_FLAGS) if (`${f.group}:` === group) addInert(f.flag);
  };

  add(G.server, new Option('--id <string>', 'server name reported in metadata').default('triton'));
  add(
    G.server,
    new Option('--exit-timeout-secs <integer>', 'time allowed for in-flight requests and finalize at shutdown')
      .default(30)
      .argParser(parseInteger('--exit-timeout-secs', 0)),
  );

  add(G.logging, new Option('--log-verbose <integer>', 'verbose log level (0 = off)').default(0).argParser(parseInteger('--log-verbose', 0)));
  add(G.logging, new Option('--log-info <boolean>', 'log INFO lines').default(true).argParser(parseBool('--log-info')));
  add(G.logging, new Option('--log-warning <boolean>', 'log WARNING lines').default(true).argParser(parseBool('--log-warning')));
  add(G.logging, new Option('--log-error <boolean>', 'log ERROR lines').default(true).argParser(parseBool('--log-error')));
  add(G.logging, new Option('--log-format <string>', 'log line prefix: default or ISO8601').default('default').choices(['default', 'ISO8601']));
  add(G.logging, new Option('--log-file <string>', 'write the log to this file (appended) instead of stderr').default(''));

  add(G.repository, new Option('--model-store <string>', 'alias of --model-repository').argParser(collect));
  add(G.repository, new Option('--model-repository <string>', 'model repository path (repeatable)').argParser(collect));
  add(
    G.repository,
    new Option('--exit-on-error <boolean>', 'exit when a model fails to load at start-up').default(true).argParser(parseBool('--exit-on-error')),
  );
  add(G.repository, new Option('--disable-auto-complete-config', 'do not complete model configs from the model'));
  add(
    G.repository,
    new Option('--strict-readiness <boolean>', 'ready only when every model is ready').default(true).argParser(parseBool('--strict-readiness')),
  );
  add(
    G.repository,
    new Option(
      '--model-control-mode <string>',
      'none: load every model at start-up; poll: also rescan the repository; explicit: load --load-model names, then the repository API',
    )
      .default('none')
      .argParser(parseChoice('--model-control-mode', ['none', 'poll', 'explicit'] as const)),
  );
  add(
    G.repository,
    new Option('--repository-poll-secs <integer>', 'interval between repository scans in poll mode (0 = none)')
      .default(15)
      .argParser(parseInteger('--repository-poll-secs', 0)),
  );
  add(G.repository, new Option('--load-model <string>', 'model to load at start-up in explicit mode (repeatable; * = all)').argParser(collect));
  add(
    G.repository,
    new Option('--model-config-name <string>', "load each model's configs/<name>.pbtxt where it has one, else its config.pbtxt").argParser((v: string) => {
      // tritonserver's rule: the name has no space.
      if (v === '' || /\s/.test(v)) throw new InvalidArgumentError(`--model-config-name must be a name without spaces, got '${v}'.`);
      return v;
    }),
  );
  add(
    G.repository,
    new Option('--model-load-retry-count <integer>', 'further tries of a model version that failed to load')
      .default(0)
      .argParser(parseInteger('--model-load-retry-count', 0)),
  );
  add(
    G.repository,
    new Option('--model-load-thread-count <integer>', 'how many models load at once at start-up')
      .default(4)
      .argParser(parseInteger('--model-load-thread-count', 1)),
  );
  inertIn(G.repository);

  add(G.http, new Option('--allow-http <boolean>', 'serve HTTP').default(true).argParser(parseBool('--allow-http')));
  add(G.http, new Option('--http-address <string>', 'HTTP listen address').default('0.0.0.0'));
  add(G.http, new Option('--http-port <integer>', 'HTTP port').default(8000).argParser(port('--http-port')));
  add(
    G.http,
    new Option(
      '--http-restricted-api <<string>:<string>=<string>>',
      '<api>[,<api>...]:<key>=<value>: those APIs answer only requests with that header (repeatable)',
    ).argParser(collect),
  );
  add(
    G.http,
    new Option('--http-max-input-size <integer>', 'tritium: largest JSON header, raw binary body or decompressed HTTP body (binary tensor data not counted)')
      .default(64 * MIB)
      .argParser(parseInteger('--http-max-input-size', 1)),
  );
  add(
    G.http,
    new Option('--http-max-body-memory <integer>', 'tritium: memory all HTTP request bodies may hold at once (default: a quarter of RAM, at most 2 GiB)')
      .default(0)
      .argParser(parseInteger('--http-max-body-memory', 0)),
  );
  add(
    G.http,
    new Option('--reuse-http-port <boolean>', 'bind the HTTP port with SO_REUSEPORT, so other processes may listen on it too')
      .default(false)
      .argParser(parseBool('--reuse-http-port')),
  );
  add(
    G.http,
    new Option(
      '--http-thread-count <integer>',
      'threads accepting, parsing and answering HTTP requests; 1 = the main event loop alone (default: 1 below 8 cores, else a quarter of the cores, at most 8)',
    ).argParser(parseInteger('--http-thread-count', 1)),
  );
  add(
    G.http,
    new Option(
      '--http-max-connections <integer>',
      'tritium: client connections kept open; past it a new one replaces the oldest idle one (default: from the descriptor limit; 0 = no limit)',
    ).argParser(parseInteger('--http-max-connections', 0)),
  );
  add(
    G.http,
    new Option(
      '--http-idle-timeout-secs <integer>',
      'tritium: a connection that sends nothing for this long while idle, or while sending a request head or body, is closed (no limit while a model runs)',
    )
      .default(120)
      .argParser(parseInteger('--http-idle-timeout-secs', 1)),
  );
  add(
    G.http,
    new Option(
      '--http-max-json-output-size <integer>',
      'tritium: the largest output, in bytes of tensor data, an HTTP response sends as JSON; larger ones must be requested as binary data',
    )
      .default(256 * MIB)
      .argParser(parseInteger('--http-max-json-output-size', 1)),
  );
  add(G.http, new Option('--http-header-forward-pattern <string>', 'HTTP headers whose name matches this regular expression become request parameters'));
  inertIn(G.http);

  add(
    G.openai,
    new Option('--openai-port <integer>', 'tritium: also serve the OpenAI API (/v1/...) on a port of its own (it is always on the HTTP port)').argParser(
      port('--openai-port'),
    ),
  );
  add(G.openai, new Option('--openai-address <string>', 'tritium: listen address of --openai-port (default: --http-address)'));
  add(
    G.openai,
    new Option(
      '--tokenizer <string>',
      "tritium: a directory with tokenizer_config.json / tokenizer.json for every model's chat template and token counts (default: each model's own directory)",
    ),
  );
  add(G.openai, new Option('--chat-template <string>', "tritium: a Jinja chat template file used instead of every model's own"));
  add(
    G.openai,
    new Option('--openai-default-max-tokens <integer>', 'tritium: max_tokens of an OpenAI request that gives none')
      .default(16)
      .argParser(parseInteger('--openai-default-max-tokens', 1)),
  );
  add(
    G.openai,
    new Option(
      '--openai-restricted-api <<string>:<string>=<string>>',
      'tritium: <api>[,<api>...]:<key>=<value> for the OpenAI API (inference, model-repository, health): those answer only requests with that header (repeatable)',
    ).argParser(collect),
  );

  add(G.grpc, new Option('--allow-grpc <boolean>', 'serve gRPC').default(true).argParser(parseBool('--allow-grpc')));
  add(G.grpc, new Option('--grpc-address <string>', 'gRPC listen address').default('0.0.0.0'));
  add(G.grpc, new Option('--grpc-port <integer>', 'gRPC port').default(8001).argParser(port('--grpc-port')));
  add(
    G.grpc,
    new Option('--grpc-use-ssl <boolean>', 'serve gRPC over TLS (needs --grpc-server-cert and --grpc-server-key)')
      .default(false)
      .argParser(parseBool('--grpc-use-ssl')),
  );
  add(
    G.grpc,
    new Option('--grpc-use-ssl-mutual <boolean>', 'TLS, and clients must present a certificate signed by --grpc-root-cert')
      .default(false)
      .argParser(parseBool('--grpc-use-ssl-mutual')),
  );
  add(G.grpc, new Option('--grpc-server-cert <string>', 'PEM server certificate (with --grpc-use-ssl)'));
  add(G.grpc, new Option('--grpc-server-key <string>', 'PEM server key (with --grpc-use-ssl)'));
  add(G.grpc, new Option('--grpc-root-cert <string>', 'PEM root certificate client certificates must be signed by (with --grpc-use-ssl-mutual)'));
  const ka = KEEPALIVE_DEFAULTS;
  add(
    G.grpc,
    new Option('--grpc-keepalive-time <integer>', 'ms between keepalive pings the server sends')
      .default(ka.timeMs)
      .argParser(parseInteger('--grpc-keepalive-time', 1)),
  );
  add(
    G.grpc,
    new Option('--grpc-keepalive-timeout <integer>', 'ms to wait for a keepalive ping acknowledgement before closing the connection')
      .default(ka.timeoutMs)
      .argParser(parseInteger('--grpc-keepalive-timeout', 1)),
  );
  add(
    G.grpc,
    new Option('--grpc-keepalive-permit-without-calls <boolean>', 'send and accept keepalive pings while no call is open')
      .default(ka.permitWithoutCalls)
      .argParser(parseBool('--grpc-keepalive-permit-without-calls')),
  );
  add(
    G.grpc,
    new Option('--grpc-http2-max-pings-without-data <integer>', 'as tritonserver 2.51: its keepalive pings are not limited by it (docs/protocol-notes.md)')
      .default(ka.maxPingsWithoutData)
      .argParser(parseInteger('--grpc-http2-max-pings-without-data', 0)),
  );
  add(
    G.grpc,
    new Option('--grpc-http2-min-recv-ping-interval-without-data <integer>', 'ms expected between client pings; a sooner one is a ping strike')
      .default(ka.minRecvPingIntervalWithoutDataMs)
      .argParser(parseInteger('--grpc-http2-min-recv-ping-interval-without-data', 0)),
  );
  add(
    G.grpc,
    new Option('--grpc-http2-max-ping-strikes <integer>', 'ping strikes tolerated before GOAWAY (0 = no limit)')
      .default(ka.maxPingStrikes)
      .argParser(parseInteger('--grpc-http2-max-ping-strikes', 0)),
  );
  add(
    G.grpc,
    new Option('--grpc-max-connection-age <integer>', 'ms after which a connection gets GOAWAY (default: none)').argParser(
      parseInteger('--grpc-max-connection-age', 1),
    ),
  );
  add(
    G.grpc,
    new Option('--grpc-max-connection-age-grace <integer>', 'ms its open calls get after that GOAWAY (default: no limit)').argParser(
      parseInteger('--grpc-max-connection-age-grace', 1),
    ),
  );
  add(
    G.grpc,
    new Option(
      '--grpc-restricted-protocol <<string>:<string>=<string>>',
      '<api>[,<api>...]:<key>=<value>: those APIs answer only calls with metadata triton-grpc-protocol-<key> (repeatable)',
    ).argParser(collect),
  );
  add(
    G.grpc,
    new Option('--grpc-max-message-size <integer>', 'tritium: largest gRPC message in either direction')
      .default(2 ** 31 - 1)
      .argParser(parseInteger('--grpc-max-message-size', 1, 2 ** 31 - 1)),
  );
  add(
    G.grpc,
    new Option('--reuse-grpc-port <boolean>', 'bind the gRPC port with SO_REUSEPORT, so other processes may listen on it too')
      .default(false)
      .argParser(parseBool('--reuse-grpc-port')),
  );
  add(
    G.grpc,
    new Option('--grpc-thread-count <integer>', 'tritium: threads serving gRPC connections, as --http-thread-count does for HTTP (same default)').argParser(
      parseInteger('--grpc-thread-count', 1),
    ),
  );
  add(
    G.grpc,
    new Option(
      '--grpc-max-connections <integer>',
      'tritium: client connections kept open; past it a new one replaces the oldest idle one (default: from the descriptor limit; 0 = no limit)',
    ).argParser(parseInteger('--grpc-max-connections', 0)),
  );
  add(
    G.grpc,
    new Option(
      '--grpc-max-concurrent-streams <integer>',
      'tritium: calls one client connection may have open at once (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS); clients queue the rest',
    )
      .default(1024)
      .argParser(parseInteger('--grpc-max-concurrent-streams', 1, 2 ** 31 - 1)),
  );
  add(
    G.grpc,
    new Option(
      '--grpc-read-timeout-secs <integer>',
      'tritium: a call whose request message stops arriving (no data for this long before it is whole) is ended with DEADLINE_EXCEEDED; an open stream between messages is not bounded (0 = no limit)',
    )
      .default(120)
      .argParser(parseInteger('--grpc-read-timeout-secs', 0)),
  );
  add(
    G.grpc,
    new Option(
      '--grpc-max-body-memory <integer>',
      'tritium: memory the request messages of all gRPC calls may hold at once; a call past it waits, held back by HTTP/2 flow control (default: a quarter of RAM, at most 2 GiB)',
    )
      .default(0)
      .argParser(parseInteger('--grpc-max-body-memory', 0)),
  );
  add(
    G.grpc,
    new Option('--grpc-infer-response-compression-level <string>', 'none, low, medium or high: inference responses compressed with gzip or deflate')
      .default('none')
      .argParser(parseChoice('--grpc-infer-response-compression-level', ['none', 'low', 'medium', 'high'] as const)),
  );
  add(G.grpc, new Option('--grpc-header-forward-pattern <string>', 'gRPC metadata whose name matches this regular expression become request parameters'));
  inertIn(G.grpc);
  inertIn(G.sagemaker);
  inertIn(G.vertex);

  add(G.metrics, new Option('--allow-metrics <boolean>', 'serve Prometheus metrics').default(true).argParser(parseBool('--allow-metrics')));
  add(
    G.metrics,
    new Option('--allow-gpu-metrics <boolean>', 'export nv_gpu_* metrics, read with nvidia-smi (absent without it)')
      .default(true)
      .argParser(parseBool('--allow-gpu-metrics')),
  );
  add(G.metrics, new Option('--allow-cpu-metrics <boolean>', 'export nv_cpu_* metrics').default(true).argParser(parseBool('--allow-cpu-metrics')));
  add(G.metrics, new Option('--metrics-address <string>', 'metrics listen address (default: the HTTP address)'));
  add(G.metrics, new Option('--metrics-port <integer>', 'Prometheus metrics port').default(8002).argParser(port('--metrics-port')));
  add(
    G.metrics,
    new Option('--metrics-interval-ms <float>', 'ms between readings of the CPU and GPU metrics')
      .default(2000)
      .argParser(parseFloatFlag('--metrics-interval-ms', 1)),
  );
  add(
    G.metrics,
    new Option(
      '--metrics-config <<string>=<string>>',
      'metrics setting: counter_latencies=<bool>, summary_latencies=<bool>, summary_quantiles=<q>:<error>,..., histogram_latencies=<bool> (repeatable)',
    ).argParser(parseSetting('--metrics-config')),
  );
  inertIn(G.metrics);
  add(
    G.tracing,
    new Option(
      '--trace-config <<string>,<string>=<string>>',
      'trace setting: level=OFF|TIMESTAMPS, rate=N, count=N, triton,file=<path>, triton,log-frequency=N (repeatable)',
    ).argParser(parseTraceConfig),
  );

  add(
    G.backend,
    new Option('--backend-config <<string>,<string>=<string>>', 'backend setting, e.g. python,shm-default-byte-size=16777216 (repeatable)').argParser(
      parseBackendConfig,
    ),
  );
  add(
    G.backend,
    new Option(
      '--backend-directory <string>',
      "where Python-based backends live: backend X is <dir>/X/model.py (tritonserver's flag; the last one given wins)",
    ).default(DEFAULT_BACKEND_DIRECTORY),
  );
  add(
    G.rateLimiter,
    new Option('--rate-limit <string>', 'off, or execution_count: instances run as their rate_limiter resources allow, fewest executions x priority first')
      .default('off')
      .argParser((v: string) => {
        const mode = v.toLowerCase();
        if (mode !== 'off' && mode !== 'execution_count') throw new InvalidArgumentError('invalid argument for --rate-limit');
        return mode;
      }),
  );
  add(
    G.rateLimiter,
    new Option('--rate-limit-resource <<string>:<integer>:<integer>>', 'the count of a rate-limiter resource, on one device or all (repeatable)').argParser(
      parseRateLimitResource,
    ),
  );
  add(
    G.cache,
    new Option('--cache-config <<string>,<string>=<string>>', 'the response cache: local,size=<bytes> (repeatable for its settings)').argParser(
      parseCacheConfig,
    ),
  );
  for (const group of [G.backend, G.repoagent, G.cache, G.rateLimiter]) inertIn(group);
  add(
    G.memory,
    new Option(
      '--host-policy <<string>,<string>=<string>>',
      'CPUs for the stubs of instances under a policy: <name>,cpu-cores=0-3 or <name>,numa-node=0 (repeatable)',
    ).argParser(parseHostPolicy),
  );
  inertIn(G.memory);

  add(
    G.deprecated,
    new Option('--strict-model-config <boolean>', 'deprecated: true disables auto-complete of model configs').argParser(parseBool('--strict-model-config')),
  );
  const deprecatedTrace = (flag: string, to: string, value: string) =>
    add(G.deprecated, new Option(`${flag} <${value}>`, `deprecated: --trace-config ${to}=<value>`).argParser(collect));
  deprecatedTrace('--trace-file', 'triton,file', 'string');
  deprecatedTrace('--trace-level', 'level', 'string');
  deprecatedTrace('--trace-rate', 'rate', 'integer');
  deprecatedTrace('--trace-count', 'count', 'integer');
  deprecatedTrace('--trace-log-frequency', 'triton,log-frequency', 'integer');
  add(
    G.deprecated,
    new Option('--response-cache-byte-size <integer>', 'deprecated: --cache-config local,size=<integer>').argParser(
      parseInteger('--response-cache-byte-size', 0),
    ),
  );
  inertIn(G.deprecated);
  cmd.exitOverride();
  return cmd;
}

/** Refuses a flag tritium does not know, naming the one it most likely meant. */
function checkKnownFlags(argv: readonly string[], cmd: Command): void {
  const known = [...cmd.options.map((o) => o.long!), '--help', '--version'];
  for (const arg of argv) {
    if (arg === '--') return;
    if (!arg.startsWith('--')) continue;
    const name = arg.split('=', 1)[0]!;
    if (known.includes(name)) continue;
    const near = nearestFlag(name, known);
    throw new OptionsError(`unknown option '${arg}'${near ? ` (Did you mean ${near}?)` : ''}`);
  }
}

/** Parses argv (without node and script) into ServerOptions; throws OptionsError on bad input. */
export function parseOptions(argv: string[], cmd = buildCommand()): ServerOptions {
  checkKnownFlags(argv, cmd);
  cmd.parse(argv, { from: 'user' });
  const o = cmd.opts();
  const repos: string[] = [...(o.modelRepository ?? []), ...(o.modelStore ?? [])];
  const startupModels: string[] = o.loadModel ?? [];
  // tritonserver's own texts (src/command_line_parser.cc and the server's start-up check).
  if (startupModels.length > 0 && o.modelControlMode !== 'explicit') {
    throw new OptionsError("Use of '--load-model' requires setting '--model-control-mode=explicit' as well.");
  }
  if (startupModels.includes('*') && startupModels.length > 1) {
    throw new OptionsError("Invalid argument - Wildcard model name '*' must be the ONLY startup model if specified at all.");
  }
  if (repos.length === 0) throw new OptionsError('--model-repository must be specified at least once.');

  const backendConfig = new Map<string, Map<string, string>>();
  for (const [backend, key, value] of (o.backendConfig ?? []) as Array<[string, string, string]>) {
    if (!backendConfig.has(backend)) backendConfig.set(backend, new Map());
    backendConfig.get(backend)!.set(key, value);
  }
  // The one global setting, default-max-batch-size, belongs to the server rather than a backend: read here.
  const global = backendConfig.get('') ?? new Map<string, string>();
  const dmbs = global.get('default-max-batch-size');
  if (dmbs !== undefined && !/^\d+$/.test(dmbs)) {
    throw new OptionsError(`--backend-config=default-max-batch-size expects a non-negative integer, got '${dmbs}'.`);
  }

  const warnings = inertWarnings(cmd);
  const latencies = metricsConfig(o.metricsConfig ?? [], warnings);
  let hostPolicies: Map<string, number[]>;
  try {
    hostPolicies = resolveHostPolicies((o.hostPolicy ?? []) as HostPolicyEntry[], warnings);
  } catch (err) {
    throw new OptionsError((err as Error).message);
  }
  const options: ServerOptions = {
    modelRepositories: repos,
    backendDirectory: o.backendDirectory,
    responseCacheBytes: cacheSize(o.cacheConfig, o.responseCacheByteSize),
    rateLimit: o.rateLimit as 'off' | 'execution_count',
    rateLimitResources: o.rateLimitResource ?? [],
    httpPort: o.httpPort,
    httpAddress: o.httpAddress,
    grpcPort: o.grpcPort,
    grpcAddress: o.grpcAddress,
    metricsPort: o.metricsPort,
    metricsAddress: o.metricsAddress,
    allowHttp: o.allowHttp,
    allowGrpc: o.allowGrpc,
    allowMetrics: o.allowMetrics,
    logVerbose: o.logVerbose,
    logInfo: o.logInfo,
    logWarning: o.logWarning,
    logError: o.logError,
    logFormat: o.logFormat,
    logFile: o.logFile,
    strictReadiness: o.strictReadiness,
    autoCompleteConfig: !(o.disableAutoCompleteConfig === true || o.strictModelConfig === true),
    exitTimeoutSecs: o.exitTimeoutSecs,
    exitOnError: o.exitOnError,
    httpMaxInputSize: o.httpMaxInputSize,
    httpMaxBodyMemory: o.httpMaxBodyMemory,
    httpMaxJsonOutputSize: o.httpMaxJsonOutputSize,
    grpcMaxMessageSize: o.grpcMaxMessageSize,
    ...(o.httpMaxConnections !== undefined ? { httpMaxConnections: o.httpMaxConnections } : {}),
    httpIdleTimeoutSecs: o.httpIdleTimeoutSecs,
    httpThreadCount: o.httpThreadCount ?? defaultFrontendThreads(),
    reuseHttpPort: o.reuseHttpPort,
    reuseGrpcPort: o.reuseGrpcPort,
    ...(o.grpcMaxConnections !== undefined ? { grpcMaxConnections: o.grpcMaxConnections } : {}),
    grpcMaxConcurrentStreams: o.grpcMaxConcurrentStreams,
    grpcThreadCount: o.grpcThreadCount ?? defaultFrontendThreads(),
    grpcReadTimeoutSecs: o.grpcReadTimeoutSecs,
    grpcMaxBodyMemory: o.grpcMaxBodyMemory,
    defaultMaxBatchSize: dmbs === undefined ? 4 : Number(dmbs),
    serverId: o.id,
    modelControlMode: o.modelControlMode,
    startupModels,
    repositoryPollSecs: o.repositoryPollSecs,
    modelLoadThreadCount: o.modelLoadThreadCount,
    modelConfigName: o.modelConfigName ?? '',
    modelLoadRetryCount: o.modelLoadRetryCount,
    grpcTls: grpcTlsOf(o, warnings),
    grpcResponseCompression: o.grpcInferResponseCompressionLevel,
    httpRestricted: restrictions('--http-restricted-api', o.httpRestrictedApi),
    openai: openAiSettingsOf(o),
    grpcRestricted: restrictions('--grpc-restricted-protocol', o.grpcRestrictedProtocol),
    httpHeaderForward: o.httpHeaderForwardPattern === undefined ? undefined : pattern('--http-header-forward-pattern', o.httpHeaderForwardPattern),
    grpcHeaderForward: o.grpcHeaderForwardPattern === undefined ? undefined : pattern('--grpc-header-forward-pattern', o.grpcHeaderForwardPattern),
    grpcKeepalive: {
      timeMs: o.grpcKeepaliveTime,
      timeoutMs: o.grpcKeepaliveTimeout,
      permitWithoutCalls: o.grpcKeepalivePermitWithoutCalls,
      maxPingsWithoutData: o.grpcHttp2MaxPingsWithoutData,
      minRecvPingIntervalWithoutDataMs: o.grpcHttp2MinRecvPingIntervalWithoutData,
      maxPingStrikes: o.grpcHttp2MaxPingStrikes,
      maxConnectionAgeMs: o.grpcMaxConnectionAge ?? 0,
      maxConnectionAgeGraceMs: o.grpcMaxConnectionAgeGrace ?? 0,
    },
    allowCpuMetrics: o.allowCpuMetrics,
    metricsIntervalMs: o.metricsIntervalMs,
    metricsCounterLatencies: latencies.counter,
    metricsSummaryLatencies: latencies.summary,
    metricsSummaryQuantiles: latencies.quantiles,
    metricsHistogramLatencies: latencies.histogram,
    allowGpuMetrics: o.allowGpuMetrics,
    hostPolicies,
    traceSettings: traceSettingsOf(o, warnings),
    warnings,
    backendConfig,
  };
  checkPorts(options);
  return options;
}

interface LatencySettings {
  counter: boolean;
  summary: boolean;
  quantiles: SummaryQuantile[] | undefined;
  histogram: boolean;
}

const METRICS_SETTINGS = ['counter_latencies', 'summary_latencies', 'summary_quantiles', 'histogram_latencies'];

/** `--metrics-config` entries (the last of a setting wins); any other setting is one warning. */
function metricsConfig(entries: Array<[string, string]>, warnings: string[]): LatencySettings {
  const out: LatencySettings = { counter: true, summary: false, quantiles: undefined, histogram: false };
  for (const [key, value] of entries) {
    const flag = `--metrics-config=${key}`;
    if (key === 'counter_latencies') out.counter = parseBool(flag)(value);
    else if (key === 'summary_latencies') out.summary = parseBool(flag)(value);
    else if (key === 'histogram_latencies') out.histogram = parseBool(flag)(value);
    else if (key === 'summary_quantiles') out.quantiles = parseQuantiles(value);
    else warnings.push(`--metrics-config=${key}=${value} has no effect in tritium: the settings it reads are ${METRICS_SETTINGS.join(', ')}`);
  }
  return out;
}

/** `summary_quantiles=<quantile>:<error>,...`, each number between 0 and 1. */
function parseQuantiles(value: string): SummaryQuantile[] {
  const out: SummaryQuantile[] = [];
  for (const part of value.split(',')) {
    const m = /^\s*([0-9.]+)\s*:\s*([0-9.]+)\s*$/.exec(part);
    const quantile = Number(m?.[1]);
    const error = Number(m?.[2]);
    if (!m || !(quantile >= 0 && quantile <= 1) || !(error >= 0 && error <= 1)) {
      throw new OptionsError(
        `--metrics-config=summary_quantiles expects <quantile>:<error>,... with numbers between 0 and 1 (e.g. 0.5:0.05,0.9:0.01), got '${value}'.`,
      );
    }
    out.push({ quantile, error });
  }
  return out;
}

/** The trace settings the flags give; settings of the opentelemetry mode are one warning each. */
function traceSettingsOf(o: Record<string, unknown>, warnings: string[]): TraceSettings {
  const entries: Array<[string, string, string]> = [];
  const last = (v: unknown) => (v as string[] | undefined)?.at(-1);
  if (last(o.traceFile) !== undefined) entries.push(['triton', 'file', last(o.traceFile)!]);
  for (const l of (o.traceLevel as string[] | undefined) ?? []) entries.push(['', 'level', l]);
  if (last(o.traceRate) !== undefined) entries.push(['', 'rate', last(o.traceRate)!]);
  if (last(o.traceCount) !== undefined) entries.push(['', 'count', last(o.traceCount)!]);
  if (last(o.traceLogFrequency) !== undefined) entries.push(['triton', 'log-frequency', last(o.traceLogFrequency)!]);
  for (const e of (o.traceConfig as Array<[string, string, string]> | undefined) ?? []) {
    if (e[0] === 'opentelemetry' || (e[1] === 'mode' && e[2] !== 'triton')) {
      warnings.push(`--trace-config=${e[0] ? `${e[0]},` : ''}${e[1]}=${e[2]} has no effect in tritium: it writes Triton-mode traces (TIMESTAMPS) only`);
    } else entries.push(e);
  }
  return traceSettingsFromFlags(entries);
}

/** TLS for gRPC, as tritonserver takes it: mutual implies TLS; the files are needed only then. */
function grpcTlsOf(o: Record<string, unknown>, warnings: string[]): ServerOptions['grpcTls'] {
  const mutual = o.grpcUseSslMutual === true;
  const files: Array<[string, unknown]> = [
    ['--grpc-server-cert', o.grpcServerCert],
    ['--grpc-server-key', o.grpcServerKey],
    ['--grpc-root-cert', o.grpcRootCert],
  ];
  if (o.grpcUseSsl !== true && !mutual) {
    for (const [flag, v] of files) if (v !== undefined) warnings.push(`${flag}=${String(v)} is ignored: --grpc-use-ssl is false (gRPC is served in plaintext)`);
    return undefined;
  }
  const flag = mutual ? '--grpc-use-ssl-mutual=true' : '--grpc-use-ssl=true';
  if (o.grpcServerCert === undefined || o.grpcServerKey === undefined) throw new OptionsError(`${flag} needs --grpc-server-cert and --grpc-server-key.`);
  if (mutual && o.grpcRootCert === undefined)
    throw new OptionsError(`${flag} needs --grpc-root-cert (the certificate client certificates are checked against).`);
  return {
    certFile: o.grpcServerCert as string,
    keyFile: o.grpcServerKey as string,
    ...(o.grpcRootCert !== undefined ? { caFile: o.grpcRootCert as string } : {}),
    mutual,
  };
}

function restrictions(flag: string, values: string[] | undefined): Map<ApiGroup, Restriction> | undefined {
  if (values === undefined) return undefined;
  try {
    return parseRestrictions(flag, values);
  } catch (err) {
    throw new OptionsError((err as Error).message);
  }
}

/** The OpenAI flags; a tokenizer directory or chat template that cannot be used stops the start. */
function openAiSettingsOf(o: Record<string, unknown>): ServerOptions['openai'] {
  let restricted: Map<OpenAiApiGroup, Restriction> | undefined;
  if (o.openaiRestrictedApi !== undefined) {
    try {
      restricted = parseRestrictions('--openai-restricted-api', o.openaiRestrictedApi as string[], OPENAI_API_GROUPS);
    } catch (err) {
      throw new OptionsError((err as Error).message);
    }
  }
  const tokenizerDir = o.tokenizer as string | undefined;
  if (tokenizerDir !== undefined && !fs.statSync(tokenizerDir, { throwIfNoEntry: false })?.isDirectory()) {
    throw new OptionsError(`--tokenizer=${tokenizerDir}: not a directory.`);
  }
  const chatTemplateFile = o.chatTemplate as string | undefined;
  if (chatTemplateFile !== undefined) {
    try {
      // Read and parsed now, so a bad file stops the start instead of failing each chat request.
      ChatTemplate.fromFile(chatTemplateFile);
    } catch (err) {
      throw new OptionsError(`--chat-template=${chatTemplateFile}: ${(err as Error).message}`);
    }
  }
  return {
    defaultMaxTokens: o.openaiDefaultMaxTokens as number,
    ...(restricted ? { restricted } : {}),
    ...(tokenizerDir !== undefined ? { tokenizerDir: path.resolve(tokenizerDir) } : {}),
    ...(chatTemplateFile !== undefined ? { chatTemplateFile: path.resolve(chatTemplateFile) } : {}),
    ...(o.openaiPort !== undefined ? { port: o.openaiPort as number, address: (o.openaiAddress as string | undefined) ?? (o.httpAddress as string) } : {}),
  };
}

function pattern(flag: string, value: string): RegExp {
  try {
    return headerPattern(flag, value);
  } catch (err) {
    throw new OptionsError((err as Error).message);
  }
}

/** One warning per inert flag given on the command line (cli/inert-flags.ts). */
function inertWarnings(cmd: Command): string[] {
  const out: string[] = [];
  for (const f of INERT_FLAGS) {
    const key = cmd.options.find((o) => o.long === f.flag)!.attributeName();
    const values = cmd.getOptionValue(key) as string[] | undefined;
    if (values === undefined) continue;
    const w = inertWarning(f, values);
    if (w !== undefined) out.push(w);
  }
  return out;
}

function checkPorts(o: ServerOptions): void {
  const used = new Map<string, string>();
  const claim = (enabled: boolean, flag: string, address: string, p: number) => {
    if (!enabled || p === 0) return;
    const key = `${address}:${p}`;
    const other = used.get(key);
    if (other) throw new OptionsError(`${flag} and ${other} use the same port ${p} on ${address}.`);
    used.set(key, flag);
  };
  claim(o.allowHttp, '--http-port', o.httpAddress, o.httpPort);
  claim(o.allowGrpc, '--grpc-port', o.grpcAddress, o.grpcPort);
  claim(o.allowMetrics, '--metrics-port', o.metricsAddress ?? o.httpAddress, o.metricsPort);
  if (o.openai.port !== undefined) claim(true, '--openai-port', o.openai.address ?? o.httpAddress, o.openai.port);
}

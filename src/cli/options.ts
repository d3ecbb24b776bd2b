/**
 * @module cli/options
 * tritonserver's command-line flags, so `tritonserver` can be swapped for `tritium` in scripts.
 * Parsing is done by commander; this file owns the flag list, the value checks and the typed
 * `ServerOptions` every other layer receives.
 */
import { Command, InvalidArgumentError, Option } from 'commander';

export interface PythonBackendOptions {
  shmDefaultByteSize: number;
  shmGrowthByteSize: number;
  stubTimeoutSeconds: number;
  /** `initialize-timeout-seconds`: how long an instance's `initialize` may run before its load fails; 0 = no bound. */
  initializeTimeoutSeconds: number;
  /** Interpreter that runs the stubs (`python-executable` key); python3 from PATH by default. */
  pythonExecutable: string;
  /** `spin-us`: how long a stub and Node's event loop may poll for the next message before sleeping (0..1000000 µs, default 50). */
  spinUs: number;
  /** `spin-mode`: adaptive (poll only while it pays), always, or never. */
  spinMode: 'adaptive' | 'always' | 'never';
}

export interface ServerOptions {
  modelRepositories: string[];
  httpPort: number;
  httpAddress: string;
  grpcPort: number;
  grpcAddress: string;
  metricsPort: number;
  metricsAddress: string | undefined;
  allowHttp: boolean;
  allowGrpc: boolean;
  allowMetrics: boolean;
  logVerbose: number;
  logInfo: boolean;
  logWarning: boolean;
  logError: boolean;
  logFormat: 'default' | 'ISO8601';
  /** '' = stderr. */
  logFile: string;
  strictReadiness: boolean;
  autoCompleteConfig: boolean;
  exitTimeoutSecs: number;
  exitOnError: boolean;
  httpMaxInputSize: number;
  /** tritium: memory all HTTP request bodies may hold at once; 0 = the default. */
  httpMaxBodyMemory: number;
  /** tritium: the largest output (tensor bytes) an HTTP response sends as JSON. */
  httpMaxJsonOutputSize: number;
  grpcMaxMessageSize: number;
  defaultMaxBatchSize: number;
  serverId: string;
  /** `--model-control-mode`: none (load all, no changes), poll (rescan), explicit (API-driven). */
  modelControlMode: ModelControlMode;
  /** `--load-model` names (explicit mode; `*` alone = every model). */
  startupModels: string[];
  /** `--repository-poll-secs` (poll mode; 0 = never rescan). */
  repositoryPollSecs: number;
  python: PythonBackendOptions;
  /** Unrecognised `--backend-config` entries, kept for backends that read them (e.g. onnxruntime). */
  backendConfig: Map<string, Map<string, string>>;
}

export const MIB = 1024 * 1024;

export type ModelControlMode = 'none' | 'poll' | 'explicit';

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

export function buildCommand(): Command {
  const cmd = new Command('tritium')
    .description('Serve a Triton model repository (Python-backend and ONNX models) over KServe v2 HTTP and gRPC.')
    .allowExcessArguments(false)
    .showHelpAfterError(false)
    .addOption(new Option('--model-repository <path>', 'model repository path (repeatable)').argParser(collect))
    .addOption(new Option('--model-store <path>', 'alias of --model-repository').argParser(collect).hideHelp())
    .addOption(new Option('--http-port <port>', 'HTTP port').default(8000).argParser(port('--http-port')))
    .addOption(new Option('--http-address <addr>', 'HTTP listen address').default('0.0.0.0'))
    .addOption(new Option('--grpc-port <port>', 'gRPC port').default(8001).argParser(port('--grpc-port')))
    .addOption(new Option('--grpc-address <addr>', 'gRPC listen address').default('0.0.0.0'))
    .addOption(new Option('--metrics-port <port>', 'Prometheus metrics port').default(8002).argParser(port('--metrics-port')))
    .addOption(new Option('--metrics-address <addr>', 'metrics listen address (default: the HTTP address)'))
    .addOption(new Option('--allow-http <bool>', 'serve HTTP').default(true).argParser(parseBool('--allow-http')))
    .addOption(new Option('--allow-grpc <bool>', 'serve gRPC').default(true).argParser(parseBool('--allow-grpc')))
    .addOption(new Option('--allow-metrics <bool>', 'serve Prometheus metrics').default(true).argParser(parseBool('--allow-metrics')))
    .addOption(new Option('--log-verbose <level>', 'verbose log level (0 = off)').default(0).argParser(parseInteger('--log-verbose', 0)))
    .addOption(new Option('--log-info <bool>', 'log INFO lines').default(true).argParser(parseBool('--log-info')))
    .addOption(new Option('--log-warning <bool>', 'log WARNING lines').default(true).argParser(parseBool('--log-warning')))
    .addOption(new Option('--log-error <bool>', 'log ERROR lines').default(true).argParser(parseBool('--log-error')))
    .addOption(new Option('--log-format <format>', 'log line prefix: default or ISO8601').default('default').choices(['default', 'ISO8601']))
    .addOption(new Option('--log-file <path>', 'write the log to this file (appended) instead of stderr').default(''))
    .addOption(
      new Option('--backend-config <backend,key=value>', 'backend setting, e.g. python,shm-default-byte-size=16777216 (repeatable)').argParser(
        parseBackendConfig,
      ),
    )
    .addOption(
      new Option('--strict-model-config <bool>', 'deprecated: true disables auto-complete of model configs').argParser(parseBool('--strict-model-config')),
    )
    .addOption(new Option('--disable-auto-complete-config', 'do not complete model configs from the model'))
    .addOption(new Option('--strict-readiness <bool>', 'ready only when every model is ready').default(true).argParser(parseBool('--strict-readiness')))
    .addOption(
      new Option('--exit-timeout-secs <secs>', 'time allowed for in-flight requests and finalize at shutdown')
        .default(30)
        .argParser(parseInteger('--exit-timeout-secs', 0)),
    )
    .addOption(new Option('--exit-on-error <bool>', 'exit when a model fails to load at start-up').default(true).argParser(parseBool('--exit-on-error')))
    .addOption(
      new Option('--http-max-input-size <bytes>', 'largest JSON header, raw binary body or decompressed HTTP body (binary tensor data not counted)')
        .default(64 * MIB)
        .argParser(parseInteger('--http-max-input-size', 1)),
    )
    .addOption(
      new Option('--http-max-body-memory <bytes>', 'tritium: memory all HTTP request bodies may hold at once (default: a quarter of RAM, at most 2 GiB)')
        .default(0)
        .argParser(parseInteger('--http-max-body-memory', 0)),
    )
    .addOption(
      new Option(
        '--http-max-json-output-size <bytes>',
        'tritium: the largest output, in bytes of tensor data, an HTTP response sends as JSON; larger ones must be requested as binary data',
      )
        .default(256 * MIB)
        .argParser(parseInteger('--http-max-json-output-size', 1)),
    )
    .addOption(
      new Option('--grpc-max-message-size <bytes>', 'largest gRPC message in either direction')
        .default(2 ** 31 - 1)
        .argParser(parseInteger('--grpc-max-message-size', 1, 2 ** 31 - 1)),
    )
    .addOption(new Option('--id <name>', 'server name reported in metadata').default('triton'))
    .addOption(
      new Option(
        '--model-control-mode <mode>',
        'none: load every model at start-up; poll: also rescan the repository; explicit: load --load-model names, then the repository API',
      )
        .default('none')
        .choices(['none', 'poll', 'explicit']),
    )
    .addOption(new Option('--load-model <name>', 'model to load at start-up in explicit mode (repeatable; * = all)').argParser(collect))
    .addOption(
      new Option('--repository-poll-secs <secs>', 'interval between repository scans in poll mode (0 = none)')
        .default(15)
        .argParser(parseInteger('--repository-poll-secs', 0)),
    );
  cmd.exitOverride();
  return cmd;
}

export class OptionsError extends Error {}

/** Parses argv (without node and script) into ServerOptions; throws OptionsError on bad input. */
export function parseOptions(argv: string[], cmd = buildCommand()): ServerOptions {
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
  const py = backendConfig.get('python') ?? new Map<string, string>();
  const pyInt = (key: string, def: number, min: number, why: string) => {
    const v = py.get(key);
    if (v === undefined) return def;
    const n = Number(v);
    if (!/^\d+$/.test(v) || n < min) throw new OptionsError(`--backend-config=python,${key}: ${why}, got '${v}'.`);
    return n;
  };
  const known = new Set([
    'shm-default-byte-size',
    'shm-growth-byte-size',
    'stub-timeout-seconds',
    'initialize-timeout-seconds',
    'python-executable',
    'shm-region-prefix-name',
    'thread-pool-size',
    'shm_message_queue_size',
    'spin-us',
    'spin-mode',
  ]);
  for (const key of py.keys()) {
    if (!known.has(key)) throw new OptionsError(`--backend-config=python,${key}: unknown python backend setting.`);
  }
  const spinUs = pyInt('spin-us', 50, 0, 'must be a whole number of microseconds between 0 and 1000000');
  if (spinUs > 1_000_000)
    throw new OptionsError(`--backend-config=python,spin-us: must be a whole number of microseconds between 0 and 1000000, got '${spinUs}'.`);
  const spinMode = py.get('spin-mode') ?? 'adaptive';
  if (spinMode !== 'adaptive' && spinMode !== 'always' && spinMode !== 'never') {
    throw new OptionsError(`--backend-config=python,spin-mode: must be adaptive, always or never, got '${spinMode}'.`);
  }
  const global = backendConfig.get('') ?? new Map<string, string>();
  const dmbs = global.get('default-max-batch-size');
  if (dmbs !== undefined && !/^\d+$/.test(dmbs)) {
    throw new OptionsError(`--backend-config=default-max-batch-size expects a non-negative integer, got '${dmbs}'.`);
  }

  const options: ServerOptions = {
    modelRepositories: repos,
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
    defaultMaxBatchSize: dmbs === undefined ? 4 : Number(dmbs),
    serverId: o.id,
    modelControlMode: o.modelControlMode,
    startupModels,
    repositoryPollSecs: o.repositoryPollSecs,
    python: {
      shmDefaultByteSize: pyInt('shm-default-byte-size', MIB, MIB, 'must be at least 1 MiB (1048576 bytes)'),
      shmGrowthByteSize: pyInt('shm-growth-byte-size', MIB, 1, 'must be a positive number of bytes'),
      stubTimeoutSeconds: pyInt('stub-timeout-seconds', 30, 1, 'must be a positive number of seconds'),
      initializeTimeoutSeconds: pyInt('initialize-timeout-seconds', 0, 0, 'must be a number of seconds (0: no bound)'),
      pythonExecutable: py.get('python-executable') ?? 'python3',
      spinUs,
      spinMode,
    },
    backendConfig,
  };
  checkPorts(options);
  return options;
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
}

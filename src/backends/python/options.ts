/**
 * @module backends/python/options
 * The Python backend's options, and its `--backend-config=python,<key>=<value>` keys. As in
 * Triton, the command line passes the keys through untouched and the backend reads, checks and
 * documents its own (the onnxruntime backend's: `onnxBackendOptions` in onnx/backend.ts); the
 * server calls `pythonBackendOptions` before it opens anything, so a bad key stops start-up.
 */
import type { CustomMetrics } from '../../core/custom-metrics.js';
import type { ModelControl } from './bls.js';
import { DEFAULT_SPIN_MODE, DEFAULT_SPIN_US, SPIN_MODES, type IpcWaitOptions, type SpinMode } from './ipc/channel.js';

export interface PythonBackendOptions {
  /** `python-executable`: the interpreter that runs the stubs; python3 from PATH by default. */
  pythonExecutable: string;
  /** `shm-default-byte-size`: the size of each instance's n0 segment (at least 1 MiB). */
  shmDefaultByteSize: number;
  /** `shm-growth-byte-size`: the least size of each further input segment. */
  shmGrowthByteSize: number;
  /** `stub-timeout-seconds`: how long a stub may take to start, and to answer a heartbeat. */
  stubTimeoutSeconds: number;
  /** `initialize-timeout-seconds`: how long an instance's `initialize` may run before its load fails; 0 or absent = no bound. */
  initializeTimeoutSeconds?: number;
  /**
   * `spin-us` / `spin-mode`: how long a stub and Node's event loop may poll for the next message
   * before sleeping (0..1000000 µs), and when (adaptive: only while it pays; always; never).
   * Adaptive 50 µs when absent.
   */
  ipcWait?: IpcWaitOptions;
  /**
   * `max-async-executes`: how many `async def execute` coroutines of a decoupled model one
   * instance runs at once; past it further requests wait in the scheduler's queue. The stub's
   * default when absent.
   */
  /**
   * `concurrent-async-executes`: how many `async def execute` coroutines of a non-decoupled
   * instance run at once (beyond Triton, which awaits each before the next batch; 1, the
   * default, keeps Triton's behaviour). A model's CONCURRENT_ASYNC_EXECUTES parameter wins.
   */
  concurrentAsyncExecutes?: number;
  maxAsyncExecutes?: number;
  /**
   * `shm-region-prefix-name`: Triton names its regions with it; tritium's are its own
   * (ipc/shm-name.ts), so it only decides whether models load: a prefix holding a shell
   * metacharacter fails every Python model's load, as in Triton (stub-name.ts).
   */
  shmRegionPrefixName?: string;
  /** Explicit model control for pb_utils.load_model / unload_model; absent outside explicit mode. */
  modelControl?: ModelControl;
  /** The server's families for pb_utils.MetricFamily (exported on /metrics). */
  customMetrics?: CustomMetrics;
  /** `--host-policy`: the CPUs of each policy name; an instance's stub runs on its policy's. */
  hostPolicies?: ReadonlyMap<string, readonly number[]>;
  /** `--backend-directory`: where Python-based backends' model.py files are (default tritonserver's). */
  backendDirectory?: string;
  /**
   * `stub-start`: `fork` (the default) forks each stub from one interpreter per executable that
   * imported numpy and the stub's modules once (fork-server.ts); `spawn` starts every stub as a
   * fresh interpreter, as Triton does. Stubs of an EXECUTION_ENV_PATH or a host policy are
   * spawned either way. Fork when absent.
   */
  stubStart?: StubStart;
}

export const STUB_STARTS = ['fork', 'spawn'] as const;
export type StubStart = (typeof STUB_STARTS)[number];

/** What the server hands the backend besides its keys. */
type PythonBackendWiring = Pick<PythonBackendOptions, 'modelControl' | 'customMetrics' | 'hostPolicies' | 'backendDirectory'>;

const MIB = 1024 * 1024;
const MAX_SPIN_US = 1_000_000;

/**
 * Every key the backend takes. `thread-pool-size` and `shm_message_queue_size` are Triton's,
 * accepted so its command lines run, and mean nothing here: messages travel on rings.
 * `shm-region-prefix-name` names no region here either, but is checked as Triton checks it.
 */
const KEYS = new Set([
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
  'max-async-executes',
  'concurrent-async-executes',
  'stub-start',
]);

/** "a, b or c". */
const orList = (words: readonly string[]): string => `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;

/**
 * The backend's options from the `python` entries of `--backend-config` (backend name →
 * key → value) and the server's wiring. Throws an Error whose text names the key, what it must
 * be and the value given.
 */
export function pythonBackendOptions(backendConfig: ReadonlyMap<string, ReadonlyMap<string, string>>, wiring: PythonBackendWiring = {}): PythonBackendOptions {
  const own = backendConfig.get('python') ?? new Map<string, string>();
  for (const key of own.keys()) {
    if (!KEYS.has(key)) throw new Error(`--backend-config=python,${key}: unknown python backend setting.`);
  }
  const whole = (key: string, def: number, min: number, why: string, max = Number.MAX_SAFE_INTEGER): number => {
    const v = own.get(key);
    if (v === undefined) return def;
    const n = Number(v);
    if (!/^\d+$/.test(v) || n < min || n > max) throw new Error(`--backend-config=python,${key}: ${why}, got '${v}'.`);
    return n;
  };
  const spinUs = whole('spin-us', DEFAULT_SPIN_US, 0, `must be a whole number of microseconds between 0 and ${MAX_SPIN_US}`, MAX_SPIN_US);
  const spinMode = own.get('spin-mode') ?? DEFAULT_SPIN_MODE;
  if (!SPIN_MODES.includes(spinMode as SpinMode)) {
    throw new Error(`--backend-config=python,spin-mode: must be ${orList(SPIN_MODES)}, got '${spinMode}'.`);
  }
  const stubStart = own.get('stub-start') ?? 'fork';
  if (!STUB_STARTS.includes(stubStart as StubStart)) {
    throw new Error(`--backend-config=python,stub-start: must be ${orList(STUB_STARTS)}, got '${stubStart}'.`);
  }
  return {
    stubStart: stubStart as StubStart,
    shmDefaultByteSize: whole('shm-default-byte-size', MIB, MIB, `must be at least 1 MiB (${MIB} bytes)`),
    shmGrowthByteSize: whole('shm-growth-byte-size', MIB, 1, 'must be a positive number of bytes'),
    stubTimeoutSeconds: whole('stub-timeout-seconds', 30, 1, 'must be a positive number of seconds'),
    initializeTimeoutSeconds: whole('initialize-timeout-seconds', 0, 0, 'must be a number of seconds (0: no bound)'),
    pythonExecutable: own.get('python-executable') ?? 'python3',
    ipcWait: { spinUs, spinMode: spinMode as SpinMode },
    maxAsyncExecutes: whole('max-async-executes', 128, 1, 'must be a positive number of coroutines'),
    concurrentAsyncExecutes: whole('concurrent-async-executes', 1, 1, 'must be a positive number of coroutines'),
    shmRegionPrefixName: own.get('shm-region-prefix-name'),
    ...wiring,
  };
}

/**
 * @module cli/inert-flags
 * tritonserver 2.51 flags that have no meaning in tritium (GPU memory, frontends and plug-in
 * directories tritium does not have, thread pools of a threaded server). Launch scripts pass
 * them, so tritium accepts each with the value type tritonserver takes and logs one warning
 * line saying it has no effect and why, rather than exiting or silently ignoring it
 * (docs/protocol-notes.md, "Command line").
 *
 * Flags whose meaning depends on the value (e.g. `--rate-limit=off` is what tritium does,
 * `--rate-limit=execution_count` is not) have a `warnIf` that says which values are inert.
 */

export type FlagValue = 'integer' | 'boolean' | 'string' | 'float';

export interface InertFlag {
  flag: string;
  /** tritonserver's `--help` group. */
  group: string;
  value: FlagValue;
  /** Value placeholder shown in --help (tritonserver's). */
  placeholder?: string;
  repeatable?: boolean;
  /** Why it has no effect here; completes "--flag has no effect in tritium: ...". */
  why: string;
  /** Returns false for a value that is tritium's behaviour anyway (no warning). */
  warnIf?: (value: string) => boolean;
}

const NO_GPU = 'tritium runs models on the CPU and manages no GPU memory';

export const INERT_FLAGS: readonly InertFlag[] = [
  {
    flag: '--model-namespacing',
    group: 'Model Repository',
    value: 'boolean',
    why: 'model names must be unique across repositories',
    warnIf: isTrue,
  },
  { flag: '--enable-peer-access', group: 'Model Repository', value: 'boolean', why: NO_GPU },
  {
    flag: '--grpc-infer-allocation-pool-size',
    group: 'GRPC',
    value: 'integer',
    why: 'gRPC request and response objects are allocated per call and reclaimed by the garbage collector; there is no pool to size',
  },
  { flag: '--allow-sagemaker', group: 'Sagemaker', value: 'boolean', why: 'tritium has no SageMaker frontend', warnIf: isTrue },
  { flag: '--sagemaker-port', group: 'Sagemaker', value: 'integer', why: 'tritium has no SageMaker frontend' },
  {
    flag: '--sagemaker-safe-port-range',
    group: 'Sagemaker',
    value: 'string',
    placeholder: '<<integer>-<integer>>',
    why: 'tritium has no SageMaker frontend',
  },
  { flag: '--sagemaker-thread-count', group: 'Sagemaker', value: 'integer', why: 'tritium has no SageMaker frontend' },
  { flag: '--allow-vertex-ai', group: 'Vertex', value: 'boolean', why: 'tritium has no Vertex AI frontend', warnIf: isTrue },
  { flag: '--vertex-ai-port', group: 'Vertex', value: 'integer', why: 'tritium has no Vertex AI frontend' },
  { flag: '--vertex-ai-thread-count', group: 'Vertex', value: 'integer', why: 'tritium has no Vertex AI frontend' },
  { flag: '--vertex-ai-default-model', group: 'Vertex', value: 'string', why: 'tritium has no Vertex AI frontend' },
  {
    flag: '--repoagent-directory',
    group: 'Repository Agent',
    value: 'string',
    why: 'tritium loads no repository agents',
  },
  {
    flag: '--cache-directory',
    group: 'Response Cache',
    value: 'string',
    why: 'the local cache is built into tritium; no cache library is loaded from a directory',
  },
  { flag: '--pinned-memory-pool-byte-size', group: 'Memory/Device Management', value: 'integer', why: NO_GPU },
  {
    flag: '--cuda-memory-pool-byte-size',
    group: 'Memory/Device Management',
    value: 'string',
    placeholder: '<<integer>:<integer>>',
    repeatable: true,
    why: NO_GPU,
  },
  {
    flag: '--cuda-virtual-address-size',
    group: 'Memory/Device Management',
    value: 'string',
    placeholder: '<<integer>:<integer>>',
    repeatable: true,
    why: NO_GPU,
  },
  { flag: '--min-supported-compute-capability', group: 'Memory/Device Management', value: 'float', why: NO_GPU },
  {
    flag: '--buffer-manager-thread-count',
    group: 'Memory/Device Management',
    value: 'integer',
    why: 'tensors are copied on the event loop and in the stubs; there is no copy thread pool',
  },
  {
    flag: '--model-load-gpu-limit',
    group: 'Memory/Device Management',
    value: 'string',
    placeholder: '<<device_id>:<fraction>>',
    repeatable: true,
    why: NO_GPU,
  },
];

function isTrue(v: string): boolean {
  return ['true', '1', 'yes', 'on'].includes(v.toLowerCase());
}

/** The one warning line for an inert flag given on the command line. */
export function inertWarning(f: InertFlag, values: readonly string[]): string | undefined {
  const warned = f.warnIf ? values.some(f.warnIf) : true;
  if (!warned) return undefined;
  const shown = values.length === 1 ? `${f.flag}=${values[0]}` : f.flag;
  return `${shown} has no effect in tritium: ${f.why}`;
}

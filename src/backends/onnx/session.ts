/**
 * @module backends/onnx/session
 * Session options for one instance, read from the model config the way Triton's ORT backend
 * reads it, and the choice of execution provider.
 *
 * Config → onnxruntime-node session options:
 *   parameters { key: "intra_op_thread_count" }   → intraOpNumThreads (0 = ORT picks: one per core)
 *   parameters { key: "inter_op_thread_count" }   → interOpNumThreads (0 = ORT picks)
 *   parameters { key: "execution_mode" }          → "0" sequential (default), "1" parallel
 *   parameters { key: "enable_mem_arena" }        → enableCpuMemArena ("1"/"0", "true"/"false")
 *   parameters { key: "enable_mem_pattern" }      → enableMemPattern
 *   optimization { graph { level } }              → graphOptimizationLevel, as Triton's ORT backend
 *       documents it: unset/0 = all, -1 = basic, 1 = extended (basic + fusions), 2 = disabled;
 *       any other value falls back to all, with a log line.
 *
 * Execution providers: a KIND_GPU instance (normalisation already turned KIND_AUTO into GPU on a
 * GPU host) runs on the CUDA provider of its device when onnxruntime-node has that provider
 * installed and the device exists; otherwise on CPU, and the backend logs why once per model.
 * A GPU instance whose config names the `tensorrt` GPU accelerator gets the TensorRT provider
 * first (then CUDA, then CPU for the nodes TensorRT cannot take) when onnxruntime-node has it.
 * `optimization.execution_accelerators` entries tritium cannot honour (OpenVINO, TensorRT without
 * its provider, provider parameters onnxruntime-node does not pass) are reported as notes to
 * log, never as load errors.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { InferenceSession } from 'onnxruntime-node';
import { Errors } from '../../core/errors.js';
import type { ModelConfig } from '../../generated/model_config_pb.js';
import { ortBinaryDir } from './ort-location.js';

export type Provider = 'cpu' | 'cuda';

export interface ProviderChoice {
  provider: Provider;
  /** Why a GPU instance runs on CPU (logged once per model). */
  fallbackReason?: string;
}

const CUDA_LIBRARY = process.platform === 'win32' ? 'onnxruntime_providers_cuda.dll' : 'libonnxruntime_providers_cuda.so';
const TENSORRT_LIBRARY = process.platform === 'win32' ? 'onnxruntime_providers_tensorrt.dll' : 'libonnxruntime_providers_tensorrt.so';

function providerLibraryInstalled(library: string): boolean {
  try {
    return fs.existsSync(path.join(ortBinaryDir(), library));
  } catch {
    return false;
  }
}

/**
 * Whether onnxruntime-node has its CUDA provider. The npm package ships it separately: its
 * install script downloads it from NuGet unless told to skip. A source checkout skips it (the
 * project's .npmrc); an installed tritium package keeps a CPU-only copy when the download fails
 * (ort-location.ts).
 */
export function cudaProviderInstalled(): boolean {
  return providerLibraryInstalled(CUDA_LIBRARY);
}

/** Whether onnxruntime-node has its TensorRT provider (downloaded with the CUDA one). */
export function tensorrtProviderInstalled(): boolean {
  return providerLibraryInstalled(TENSORRT_LIBRARY);
}

export const CUDA_HINT = "see the GPU section of tritium's README to enable CUDA";

export function chooseProvider(kind: 'CPU' | 'GPU' | 'MODEL', deviceId: number, gpus: readonly number[], cudaInstalled: boolean): ProviderChoice {
  if (kind !== 'GPU') return { provider: 'cpu' };
  if (!cudaInstalled) {
    return {
      provider: 'cpu',
      fallbackReason: `onnxruntime-node was installed without its CUDA execution provider (${CUDA_LIBRARY} is missing; ${CUDA_HINT})`,
    };
  }
  if (!gpus.includes(deviceId)) return { provider: 'cpu', fallbackReason: `GPU ${deviceId} is not available on this host` };
  return { provider: 'cuda' };
}

export interface SessionSettings {
  options: InferenceSession.SessionOptions;
  /** Config entries that cannot be honoured, to log (not errors). */
  notes: string[];
}

const GRAPH_LEVELS: ReadonlyMap<number, InferenceSession.SessionOptions['graphOptimizationLevel']> = new Map([
  [0, 'all'],
  [-1, 'basic'],
  [1, 'extended'],
  [2, 'disabled'],
]);

function parameter(config: ModelConfig, key: string): string | undefined {
  return config.parameters[key]?.stringValue;
}

function intParameter(config: ModelConfig, key: string): number | undefined {
  const raw = parameter(config, key);
  if (raw === undefined || raw.trim() === '') return undefined;
  const n = Number(raw.trim());
  if (!Number.isSafeInteger(n) || n < 0) {
    throw Errors.onnxParameterInteger(key, config.name, raw);
  }
  return n;
}

function boolParameter(config: ModelConfig, key: string): boolean | undefined {
  const raw = parameter(config, key);
  if (raw === undefined) return undefined;
  const v = raw.trim().toLowerCase();
  if (v === '1' || v === 'true') return true;
  if (v === '0' || v === 'false') return false;
  throw Errors.onnxParameterBool(key, config.name, raw);
}

/** The name of the first execution provider of session options ('cpu' when none is given). */
export function firstProvider(options: InferenceSession.SessionOptions): string {
  const p = options.executionProviders?.[0];
  return p === undefined ? 'cpu' : typeof p === 'string' ? p : p.name;
}

/** What the installed onnxruntime-node offers beyond CUDA (GPU instances only). */
export interface InstalledProviders {
  tensorrt: boolean;
}

export function sessionSettings(
  config: ModelConfig,
  provider: Provider,
  deviceId: number,
  installed: InstalledProviders = { tensorrt: false },
): SessionSettings {
  const notes: string[] = [];
  const options: InferenceSession.SessionOptions = {};

  const level = config.optimization?.graph?.level ?? 0;
  const mapped = GRAPH_LEVELS.get(level);
  if (mapped === undefined) notes.push(`optimization.graph.level ${level} is not one of -1, 0, 1, 2; using all optimizations`);
  options.graphOptimizationLevel = mapped ?? 'all';

  const intra = intParameter(config, 'intra_op_thread_count');
  if (intra !== undefined) options.intraOpNumThreads = intra;
  const inter = intParameter(config, 'inter_op_thread_count');
  if (inter !== undefined) options.interOpNumThreads = inter;
  const mode = intParameter(config, 'execution_mode');
  if (mode !== undefined) {
    if (mode > 1) notes.push(`execution_mode '${mode}' is neither 0 (sequential) nor 1 (parallel); using sequential`);
    options.executionMode = mode === 1 ? 'parallel' : 'sequential';
  }
  const arena = boolParameter(config, 'enable_mem_arena');
  if (arena !== undefined) options.enableCpuMemArena = arena;
  const pattern = boolParameter(config, 'enable_mem_pattern');
  if (pattern !== undefined) options.enableMemPattern = pattern;

  const accel = config.optimization?.executionAccelerators;
  for (const a of accel?.cpuExecutionAccelerator ?? []) {
    notes.push(`cpu_execution_accelerator '${a.name}' is not available in onnxruntime-node; running on the default CPU provider`);
  }
  if (provider === 'cuda') {
    let tensorrt = false;
    for (const a of accel?.gpuExecutionAccelerator ?? []) {
      const keys = Object.keys(a.parameters);
      if (a.name === 'cuda') {
        if (keys.length) notes.push(`CUDA execution accelerator parameters are not passed by onnxruntime-node and are ignored: ${keys.join(', ')}`);
      } else if (a.name === 'tensorrt' && installed.tensorrt) {
        tensorrt = true;
        // onnxruntime-node hands the TensorRT provider its device and nothing else.
        if (keys.length) {
          notes.push(
            `TensorRT execution accelerator parameters are not passed by onnxruntime-node (only the device is), so TensorRT builds FP32 engines with its default workspace; ignored: ${keys.join(', ')}`,
          );
        }
      } else if (a.name === 'tensorrt') {
        notes.push(
          `gpu_execution_accelerator 'tensorrt': onnxruntime-node was installed without its TensorRT execution provider (${TENSORRT_LIBRARY} is missing; ${CUDA_HINT}); running on the CUDA provider`,
        );
      } else {
        notes.push(`gpu_execution_accelerator '${a.name}' is not available in onnxruntime-node; running on the CUDA provider`);
      }
    }
    // Nodes TensorRT cannot take run on CUDA, then CPU, as with Triton's ORT backend.
    const gpuProviders: InferenceSession.ExecutionProviderConfig[] = [{ name: 'cuda', deviceId }, 'cpu'];
    if (tensorrt) gpuProviders.unshift({ name: 'tensorrt', deviceId } satisfies InferenceSession.TensorRtExecutionProviderOption);
    options.executionProviders = gpuProviders;
  } else {
    // Said on CPU instances too, so a config written for a GPU host does not look obeyed here.
    for (const a of accel?.gpuExecutionAccelerator ?? []) {
      notes.push(`gpu_execution_accelerator '${a.name}' applies to GPU instances only; this instance runs on the CPU provider`);
    }
    options.executionProviders = ['cpu'];
  }
  return { options, notes };
}

/**
 * Filling `backend`, `platform` and `default_model_filename` from the files
 * in a version directory (docs/protocol-notes.md,
 * "Model configuration normalisation"). Runs before normalizeModelConfig, which needs the
 * backend to pick defaults.
 */
import type { ModelConfig } from '../../generated/model_config_pb.js';

interface Framework {
  file: string;
  backend: string;
  platform: string;
}

// Checked in this order when several model files are present.
const BY_FILE: readonly Framework[] = [
  { file: 'model.onnx', backend: 'onnxruntime', platform: 'onnxruntime_onnx' },
  { file: 'model.py', backend: 'python', platform: '' },
  { file: 'model.plan', backend: 'tensorrt', platform: 'tensorrt_plan' },
  { file: 'model.pt', backend: 'pytorch', platform: 'pytorch_libtorch' },
  { file: 'model.savedmodel', backend: 'tensorflow', platform: 'tensorflow_savedmodel' },
  { file: 'model.graphdef', backend: 'tensorflow', platform: 'tensorflow_graphdef' },
  { file: 'model.xml', backend: 'openvino', platform: '' },
];

/** Platform → the backend that serves it (a platform alone names its backend). */
export const BACKEND_OF_PLATFORM: ReadonlyMap<string, string> = new Map([
  ['onnxruntime_onnx', 'onnxruntime'],
  ['tensorrt_plan', 'tensorrt'],
  ['pytorch_libtorch', 'pytorch'],
  ['tensorflow_savedmodel', 'tensorflow'],
  ['tensorflow_graphdef', 'tensorflow'],
]);

/** Backend → the platform filled in when only the backend is given. */
const DEFAULT_PLATFORM: ReadonlyMap<string, string> = new Map([
  ['onnxruntime', 'onnxruntime_onnx'],
  ['tensorrt', 'tensorrt_plan'],
  ['pytorch', 'pytorch_libtorch'],
]);

function extension(name: string): string {
  const base = name.slice(name.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot < 0 ? '' : base.slice(dot);
}

/**
 * Fills backend/platform/default_model_filename where missing, **in place**,
 * and returns the same object. `versionDirFiles` are the entry names (or
 * paths) in the model's first version directory. Ensembles are left alone.
 */
export function inferBackend(versionDirFiles: readonly string[], cfg: ModelConfig): ModelConfig {
  const out = cfg;
  if (out.platform === 'ensemble') return out;
  const present = new Set(versionDirFiles.map((f) => f.slice(f.lastIndexOf('/') + 1)));

  if (out.backend === '' && out.platform === '') {
    // An explicit default_model_filename says which framework by its extension
    // (a Python model may call its file something other than model.py).
    const byName = out.defaultModelFilename !== '' ? BY_FILE.find((fw) => extension(fw.file) === extension(out.defaultModelFilename)) : undefined;
    const fw = byName ?? BY_FILE.find((f) => present.has(f.file));
    if (fw !== undefined) {
      out.backend = fw.backend;
      out.platform = fw.platform;
    }
  } else if (out.backend === '') {
    out.backend = BACKEND_OF_PLATFORM.get(out.platform) ?? '';
  } else if (out.platform === '') {
    out.platform = DEFAULT_PLATFORM.get(out.backend) ?? '';
  }

  if (out.defaultModelFilename === '') {
    const fw = BY_FILE.find((f) => f.backend === out.backend && f.platform === out.platform) ?? BY_FILE.find((f) => f.backend === out.backend);
    if (fw !== undefined) out.defaultModelFilename = fw.file;
  }
  return out;
}

/**
 * @module backends/onnx/cuda/manifest
 * What `tritium install-cuda` put next to onnxruntime-node's libraries, written there as
 * `tritium-cuda.json`: the CUDA libraries from PyPI's nvidia-* wheels (under `cuda-libs/`) in
 * the order they are loaded before a CUDA session opens, and what they came from. A CUDA
 * provider installed another way (onnxruntime-node's own download from NuGet, with CUDA from the
 * system) has no manifest and needs no preloading.
 */
import fs from 'node:fs';
import path from 'node:path';

export const MANIFEST_FILE = 'tritium-cuda.json';
/** The directory under onnxruntime-node's binary directory that holds the nvidia-* wheels' files. */
export const LIBRARIES_DIR = 'cuda-libs';

export interface CudaManifest {
  /** The onnxruntime-gpu version the providers came from (that of onnxruntime-node). */
  onnxruntime: string;
  /** `name==version` of every wheel installed under cuda-libs/. */
  packages: string[];
  /** Provider libraries copied into the binary directory. */
  providers: string[];
  /** Libraries to load before a CUDA session, relative to the binary directory, dependencies first. */
  preload: string[];
  /** Libraries installed but not preloaded, with why (a dependency this host lacks). */
  skipped: Array<{ library: string; reason: string }>;
  /** ISO time of the installation. */
  installed: string;
}

/** The manifest in onnxruntime-node's binary directory `binDir`; undefined when there is none. */
export function readManifest(binDir: string): CudaManifest | undefined {
  const file = path.join(binDir, MANIFEST_FILE);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const m = JSON.parse(text) as CudaManifest;
  if (!Array.isArray(m.preload) || m.preload.some((p) => typeof p !== 'string' || path.isAbsolute(p) || p.split(/[\\/]/).includes('..'))) {
    throw new Error(`${file}: 'preload' must list paths inside ${binDir}`);
  }
  return m;
}

export function writeManifest(binDir: string, m: CudaManifest): void {
  const file = path.join(binDir, MANIFEST_FILE);
  fs.writeFileSync(`${file}.tmp`, `${JSON.stringify(m, null, 2)}\n`);
  fs.renameSync(`${file}.tmp`, file);
}

/**
 * @module backends/onnx/cuda/preload
 * Loads the CUDA libraries `tritium install-cuda` installed (manifest.ts), by absolute path and
 * into the global scope, before onnxruntime opens a CUDA session: the provider library names
 * them by soname only and has no RUNPATH, so the dynamic loader would not look for them next to
 * onnxruntime-node (native/src/shared_library.cc). Once per process; the outcome is kept.
 */
import path from 'node:path';
import { loadNative } from '../../python/ipc/native.js';
import { readManifest } from './manifest.js';

/** dlopen(file, RTLD_NOW | RTLD_GLOBAL); throws the loader's message. */
export function loadSharedLibrary(file: string): void {
  loadNative().loadSharedLibrary(file);
}

const outcomes = new Map<string, string | undefined>();

/**
 * Preloads the installed CUDA libraries of onnxruntime-node's binary directory `binDir`.
 * Undefined when they loaded (or there is no manifest: nothing to load); otherwise why not,
 * naming the library and the loader's message.
 */
export function preloadCudaLibraries(binDir: string): string | undefined {
  if (outcomes.has(binDir)) return outcomes.get(binDir);
  let outcome: string | undefined;
  try {
    const manifest = readManifest(binDir);
    for (const rel of manifest?.preload ?? []) {
      try {
        loadSharedLibrary(path.join(binDir, rel));
      } catch (err) {
        outcome = `loading the CUDA library ${rel} installed by 'tritium install-cuda' failed: ${(err as Error).message}`;
        break;
      }
    }
  } catch (err) {
    outcome = (err as Error).message;
  }
  outcomes.set(binDir, outcome);
  return outcome;
}

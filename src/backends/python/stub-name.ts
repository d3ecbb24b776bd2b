/**
 * @module backends/python/stub-name
 * The names a Python model's stubs run under: the model's own (auto-complete) and each
 * instance's. tritonserver's Python backend starts its stub through `bash -c` with the name on
 * the command line, so newer releases refuse a name holding a shell metacharacter
 * (`Invalid stub name: contains invalid characters`, its QA test test_invalid_character_model_names)
 * and 2.51 hangs on one. tritium starts stubs without a shell, so nothing could be injected, but
 * it refuses the same names so that a repository behaves as under a current Triton. The same
 * check covers the shared-memory region name, which Triton passes on that command line too.
 */
import { Errors } from '../../core/errors.js';

/** The Python backend's INVALID_CHARS. */
const INVALID_CHARS = ';|&$`<>()[]{}\\"\'*?~#!';

const hasInvalidChar = (name: string): boolean => [...name].some((c) => INVALID_CHARS.includes(c));

export function isValidStubName(name: string): boolean {
  return name !== '' && !hasInvalidChar(name);
}

/** Whether Triton's region names, `<prefix><counter>`, pass the same check. */
export function isValidRegionPrefix(prefix: string | undefined): boolean {
  return prefix === undefined || !hasInvalidChar(prefix);
}

/**
 * Throws Triton's version failure when the model's or an instance's name is refused, or the
 * `shm-region-prefix-name` its region names start with (the rest of them is a counter).
 */
export function checkStubNames(modelName: string, instanceNames: readonly string[], regionPrefix?: string): void {
  for (const name of [modelName, ...instanceNames]) {
    if (!isValidStubName(name)) throw Errors.stubNameInvalid();
  }
  if (!isValidRegionPrefix(regionPrefix)) throw Errors.shmRegionNameInvalid();
}

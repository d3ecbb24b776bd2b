/**
 * @module core/model-handle
 * What frontends see of a loaded model version: protocol-shaped metadata and the config JSON,
 * without reaching into backends or the protobuf types.
 */
import type { Datatype } from './datatype.js';

export interface TensorSpec {
  name: string;
  datatype: Datatype;
  /** Config dims, without the batch dimension. */
  dims: number[];
  optional: boolean;
  /** Outputs: the lines of the config's `label_filename`, read at load (classification). */
  labels?: readonly string[];
}

export interface ModelMetadata {
  name: string;
  versions: string[];
  platform: string;
  inputs: Array<{ name: string; datatype: Datatype; shape: number[] }>;
  outputs: Array<{ name: string; datatype: Datatype; shape: number[] }>;
}

export interface ModelHandle {
  readonly name: string;
  /** Actual version number as a decimal string. */
  readonly version: string;
  readonly maxBatchSize: number;
  readonly decoupled: boolean;
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
  /** The model's directory in its repository (`<repo>/<model>`); the version's is `<directory>/<version>`. */
  readonly directory: string;
  /** Model metadata for this version (docs/protocol-notes.md, "Model metadata"). */
  metadata(): ModelMetadata;
  /** `/v2/models/<m>/config` body: the normalised config as Triton renders it. */
  configJson(): Record<string, unknown>;
  /** Runtime readiness: every instance alive and initialised. */
  isReady(): boolean;
}

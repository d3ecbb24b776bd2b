/**
 * @module frontends/grpc/handlers
 * The handler of every `inference.GRPCInferenceService` RPC, keyed by the method's local name.
 */
import type { Handlers } from '../service.js';
import { modelReady, serverLive, serverReady } from './health.js';
import { modelInfer } from './infer.js';
import { modelConfig, modelMetadata, serverMetadata } from './metadata.js';
import { repositoryIndex, repositoryModelLoad, repositoryModelUnload } from './repository.js';
import { logSettings, traceSetting } from './settings.js';
import {
  cudaSharedMemoryRegister,
  cudaSharedMemoryStatus,
  cudaSharedMemoryUnregister,
  systemSharedMemoryRegister,
  systemSharedMemoryStatus,
  systemSharedMemoryUnregister,
} from './shared-memory.js';
import { modelStatistics } from './statistics.js';
import { modelStreamInfer } from './stream-infer.js';

export const inferenceHandlers: Handlers = {
  serverLive,
  serverReady,
  modelReady,
  serverMetadata,
  modelMetadata,
  modelInfer,
  modelStreamInfer,
  modelConfig,
  modelStatistics,
  repositoryIndex,
  repositoryModelLoad,
  repositoryModelUnload,
  systemSharedMemoryStatus,
  systemSharedMemoryRegister,
  systemSharedMemoryUnregister,
  cudaSharedMemoryStatus,
  cudaSharedMemoryRegister,
  cudaSharedMemoryUnregister,
  traceSetting,
  logSettings,
};

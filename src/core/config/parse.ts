/**
 * config.pbtxt → ModelConfig. Errors are ConfigErrors of the form
 * `config.pbtxt:7:3: Message type "inference.ModelInput" has no field named "dimz".`
 */
import { ModelConfigSchema, type ModelConfig } from '../../generated/model_config_pb.js';
import { parseTextFormat, type SourceMap } from './text-format.js';

export type { SourceMap, SourcePosition } from './text-format.js';

/** Parse the text of a config.pbtxt; `file` names it in error messages. */
export function parseModelConfigText(text: string, file: string): ModelConfig {
  return parseTextFormat(ModelConfigSchema, text, file).message;
}

/**
 * Like parseModelConfigText, and also returns where each field was written
 * (see SourceMap), so that validation errors can name the line.
 */
export function parseModelConfigTextWithPositions(text: string, file: string): { config: ModelConfig; positions: SourceMap } {
  const { message, positions } = parseTextFormat(ModelConfigSchema, text, file);
  return { config: message, positions };
}

/**
 * @module frontends/openai/settings
 * The server options the OpenAI endpoints read (`--tokenizer`, `--chat-template`,
 * `--openai-default-max-tokens`, `--openai-restricted-api`), as the HTTP frontend passes them
 * (plain data: frontend threads receive a copy).
 */
import type { Restriction } from '../restricted-api.js';
import type { OpenAiFiles } from './model-text.js';
import type { OpenAiApiGroup } from './routes.js';

export interface OpenAiSettings extends OpenAiFiles {
  /** max_tokens when a request gives none (Triton's frontend: 16). */
  defaultMaxTokens: number;
  /** `--openai-restricted-api`: the header each group needs. */
  restricted?: ReadonlyMap<OpenAiApiGroup, Restriction>;
  /** This listener is `--openai-port`: it serves the OpenAI paths (and /health/ready) only. */
  ownPort?: boolean;
}

export const DEFAULT_MAX_TOKENS = 16;

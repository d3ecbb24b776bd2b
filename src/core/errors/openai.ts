/**
 * @module core/errors/openai
 * Catalogue: the OpenAI-compatible endpoints (frontends/openai/). Their clients read OpenAI's
 * error object, not Triton's, so the texts follow what OpenAI's API says in the same case; the
 * frontend adds the object's `type`, `param` and `code` (frontends/openai/errors.ts). The HTTP
 * status is the one the error code maps to, except where an entry says otherwise.
 */
import { entry, fixed } from './entry.js';
import { ErrorCode } from './triton-error.js';

const { INVALID_ARG, NOT_FOUND, UNAVAILABLE, INTERNAL } = ErrorCode;

export const openai = {
  openaiUnknownModel: entry(
    {
      code: NOT_FOUND,
      text: 'The model `{model}` does not exist or is not loaded.',
      when: "An OpenAI request or GET /v1/models/{model} names a model the server does not have. 404 with code 'model_not_found', as OpenAI's API answers (Triton's frontend answers 400).",
    },
    (model: string) => ({ model }),
  ),
  openaiModelNotReady: entry(
    {
      code: UNAVAILABLE,
      text: 'The model `{model}` is not ready for inference requests.',
      when: 'An OpenAI request for a model that is loaded but whose instances are not ready (restarting, unloading). 503.',
    },
    (model: string) => ({ model }),
  ),
  openaiBadJson: entry(
    {
      code: INVALID_ARG,
      text: 'The request body is not a JSON object: {why}',
      when: 'An OpenAI request whose body does not parse as JSON, or is not an object.',
    },
    (why: string) => ({ why }),
  ),
  openaiMissingField: entry(
    {
      code: INVALID_ARG,
      text: "Missing required parameter: '{field}'.",
      when: 'An OpenAI request without a required field (model; prompt for completions; messages for chat).',
    },
    (field: string) => ({ field }),
  ),
  openaiUnknownField: entry(
    {
      code: INVALID_ARG,
      text: 'Unrecognized request argument supplied: {field}',
      when: 'An OpenAI request with a field the endpoint does not know, as OpenAI answers (Triton answers 422).',
    },
    (field: string) => ({ field }),
  ),
  openaiBadField: entry(
    {
      code: INVALID_ARG,
      text: "Invalid value for '{field}': {why}",
      when: 'An OpenAI request field of the wrong type or out of range (temperature, top_p, n, max_tokens, stop, messages, ...).',
    },
    (field: string, why: string) => ({ field, why }),
  ),
  openaiUnsupportedField: entry(
    {
      code: INVALID_ARG,
      text: "'{field}' is not supported for model `{model}`: {why}",
      when: "An OpenAI request asks for something the model's mapping cannot carry (logprobs from a model without a logprobs output, tools, suffix, logit_bias).",
    },
    (field: string, model: string, why: string) => ({ field, model, why }),
  ),
  openaiPromptTooLong: entry(
    {
      code: INVALID_ARG,
      text: "This model's maximum context length is {max} tokens. However, you requested {total} tokens ({prompt} in the prompt, {completion} for the completion). Please reduce the prompt or the completion length.",
      when: "The prompt's tokens (counted with the model's tokenizer) plus max_tokens exceed the model's max_model_len (config parameter, or the version's model.json). Code 'context_length_exceeded'.",
    },
    (max: number, prompt: number, completion: number) => ({ max, prompt, completion, total: prompt + completion }),
  ),
  openaiNoChatTemplate: entry(
    {
      code: INVALID_ARG,
      text: 'The model `{model}` has no chat template: give one with --chat-template, or a tokenizer_config.json with a chat_template (--tokenizer, or the model directory).',
      when: 'A chat completion for a model without a chat template. Use /v1/completions for such a model.',
    },
    (model: string) => ({ model }),
  ),
  openaiChatTemplate: entry(
    {
      code: INVALID_ARG,
      text: 'The chat template of `{model}` could not render these messages: {why}',
      when: "The model's chat template failed on the request's messages (raise_exception in the template, a role it refuses, a syntax error).",
    },
    (model: string, why: string) => ({ model, why }),
  ),
  openaiTokenizerFile: entry(
    {
      code: INVALID_ARG,
      text: 'cannot use {file}: {why}',
      when: 'At start-up or model load: a --chat-template file, tokenizer_config.json or tokenizer.json that cannot be read or parsed. The server refuses to start (flags) or the model reports it at its first chat request.',
    },
    (file: string, why: string) => ({ file, why }),
  ),
  openaiNoTextOutput: entry(
    {
      code: INTERNAL,
      text: "model `{model}` answered without a 'text_output' string: {why}",
      when: 'A model reached through the OpenAI endpoints answered a response with no text_output output, or one that is not a string tensor.',
    },
    (model: string, why: string) => ({ model, why }),
  ),
  openaiNoMapping: entry(
    {
      code: INVALID_ARG,
      text: 'The model `{model}` cannot be reached through the OpenAI API: {why}',
      when: "The model has no 'text_input' string input or no 'text_output' string output, or its openai_format parameter names an unknown format (vllm, trtllm).",
    },
    (model: string, why: string) => ({ model, why }),
  ),
  openaiRestricted: entry(
    {
      code: INVALID_ARG,
      text: "This API is restricted, expecting header '{header}' with valid value",
      when: "--openai-restricted-api names this endpoint's group and the request lacks the header or its value. 401 with type 'authentication_error' and code 'invalid_auth', as Triton's frontend.",
    },
    (header: string) => ({ header }),
  ),
  openaiBodyTooLarge: entry(
    {
      code: INVALID_ARG,
      text: 'Request size of {size} bytes exceeds the maximum allowed input size of {max} bytes. Use --http-max-input-size to increase the limit.',
      when: "An OpenAI request body larger than --http-max-input-size. 413 with code 'content_too_large', as Triton's frontend.",
    },
    (size: number | string, max: number) => ({ size, max }),
  ),
  openaiMethodNotAllowed: entry(
    {
      code: INVALID_ARG,
      text: '{method} is not allowed here; use {allowed}.',
      when: "An OpenAI path asked with another method than its own (GET for the model list, POST for completions). 405 with code 'method_not_allowed'.",
    },
    (method: string, allowed: string) => ({ method, allowed }),
  ),
  openaiNotFound: fixed({
    code: NOT_FOUND,
    text: 'Not found.',
    when: 'A /v1 path the OpenAI endpoints do not serve.',
  }),
};

/**
 * @module core/config/config-error
 * ConfigError now lives in the error catalogue (core/errors/config-error.ts); this name stays so
 * the config modules and their tests import it from where they always did.
 */
export { ConfigError, type ConfigLocation } from '../errors/config-error.js';

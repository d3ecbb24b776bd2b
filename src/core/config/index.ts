/** Model configuration: schema, config.pbtxt parsing, defaults, validation, JSON. */
export * from './config-error.js';
export * from './schema.js';
export * from './parse.js';
export * from './json.js';
export * from './normalize.js';
export * from './validate.js';
export * from './instances.js';

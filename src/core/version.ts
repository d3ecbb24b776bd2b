/**
 * @module core/version
 * tritium has two versions, each with one meaning:
 * - `TRITIUM_VERSION`, tritium's own release: package.json's "version", read here so that it is
 *   written in one place (`tritium --version`).
 * - `TRITON_API_VERSION`, what `GET /v2` and gRPC `ServerMetadata` answer as `version`. Clients
 *   read that field as the Triton release they talk to, so it names the Triton release whose
 *   protocol tritium speaks: the KServe v2 protocol with Triton's extensions as the client
 *   libraries of that release use it (tritonclient 2.73, which the tests run). Behaviour beyond
 *   the protocol is checked against tritonserver 2.51, the last release that runs here
 *   (docs/protocol-notes.md).
 */
import fs from 'node:fs';

/** package.json sits two levels above this module both in src/core and in dist/core. */
const PACKAGE_JSON = new URL('../../package.json', import.meta.url);

export const TRITIUM_VERSION: string = (JSON.parse(fs.readFileSync(PACKAGE_JSON, 'utf8')) as { version: string }).version;

export const TRITON_API_VERSION = '2.73.0';

/**
 * @module frontends/grpc/transport/status
 * gRPC status codes and the error a handler or the transport ends a call with. The message
 * travels as `grpc-message`, percent-encoded as the gRPC HTTP/2 mapping requires.
 */

export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

export class StatusError extends Error {
  constructor(
    readonly code: number,
    readonly details: string,
  ) {
    super(details);
  }
}

/**
 * `grpc-message` text: bytes outside printable ASCII, and '%' itself, become %XX of their
 * UTF-8 encoding (clients decode it back to the original text).
 */
export function encodeGrpcMessage(text: string): string {
  let plain = true;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x25) {
      plain = false;
      break;
    }
  }
  if (plain) return text;
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    out += byte < 0x20 || byte > 0x7e || byte === 0x25 ? '%' + byte.toString(16).toUpperCase().padStart(2, '0') : String.fromCharCode(byte);
  }
  return out;
}

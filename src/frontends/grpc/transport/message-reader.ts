/**
 * @module frontends/grpc/transport/message-reader
 * Cuts a gRPC request body into its messages. On the wire each message is
 *
 *   [1 byte: compressed flag][4 bytes: big-endian length][length bytes: payload]
 *
 * and HTTP/2 DATA frames split or join messages arbitrarily. A chunk holding whole messages
 * (the common case: one small request in one frame) is sliced without a copy; only a message
 * spread over several chunks is assembled.
 */
import { GrpcStatus, StatusError } from './status.js';

const PREFIX = 5;

export interface RawMessage {
  compressed: boolean;
  data: Buffer;
}

export class MessageReader {
  /** Bytes of an incomplete message (prefix included), in arrival order. */
  #parts: Buffer[] = [];
  #partBytes = 0;
  #completed = 0;
  #bytesRead = 0;

  constructor(readonly maxMessageBytes: number) {}

  /** True while part of a message has arrived and the rest has not. */
  get midMessage(): boolean {
    return this.#partBytes > 0;
  }

  /** Bytes pushed so far (the read timeout watches it move). */
  get bytesRead(): number {
    return this.#bytesRead;
  }

  /** Messages completed so far. */
  get completed(): number {
    return this.#completed;
  }

  /**
   * The size (prefix included) of the message that has begun to arrive but is not whole, once
   * its prefix is in; undefined otherwise. `push` keeps a started message's prefix whole in its
   * first part once all five bytes are in.
   */
  get pendingMessageBytes(): number | undefined {
    if (this.#partBytes < PREFIX) return undefined;
    return PREFIX + this.#parts[0]!.readUInt32BE(1);
  }

  /**
   * Adds a chunk and appends every message it completes to `out`.
   * @throws StatusError RESOURCE_EXHAUSTED for a message over the limit (the call must end:
   *   the stream is no longer in sync).
   */
  push(chunk: Buffer, out: RawMessage[]): void {
    this.#bytesRead += chunk.length;
    let buf = chunk;
    if (this.#partBytes > 0) {
      this.#parts.push(chunk);
      this.#partBytes += chunk.length;
      if (this.#partBytes < PREFIX) return;
      // Once, when the prefix is complete but split: so that it is read from one buffer.
      if (this.#parts[0]!.length < PREFIX) this.#parts = [Buffer.concat(this.#parts, this.#partBytes)];
      const need = PREFIX + this.#checkedLength(this.#parts[0]!);
      if (this.#partBytes < need) return;
      buf = Buffer.concat(this.#parts, this.#partBytes);
      this.#parts = [];
      this.#partBytes = 0;
    }
    let off = 0;
    while (buf.length - off >= PREFIX) {
      const len = this.#checkedLength(buf.subarray(off, off + PREFIX));
      if (buf.length - off - PREFIX < len) break;
      out.push({ compressed: buf[off] !== 0, data: buf.subarray(off + PREFIX, off + PREFIX + len) });
      this.#completed++;
      off += PREFIX + len;
    }
    if (off < buf.length) {
      const rest = buf.subarray(off);
      this.#parts.push(rest);
      this.#partBytes = rest.length;
    }
  }

  #checkedLength(prefix: Buffer): number {
    const len = prefix.readUInt32BE(1);
    if (len > this.maxMessageBytes) {
      throw new StatusError(GrpcStatus.RESOURCE_EXHAUSTED, `Received message larger than max (${len} vs. ${this.maxMessageBytes})`);
    }
    return len;
  }
}

/**
 * One outgoing message: its prefix (never compressed: clients accept identity), followed by
 * `extra` bytes of room where the caller copies the payload, or none when it writes it apart.
 */
export function messagePrefix(payloadLength: number, extra: number): Buffer {
  const out = Buffer.allocUnsafe(PREFIX + extra);
  out[0] = 0;
  out.writeUInt32BE(payloadLength, 1);
  return out;
}

/** One outgoing message with its prefix, in one buffer. */
export function frameMessage(payload: Uint8Array): Buffer {
  const out = messagePrefix(payload.length, payload.length);
  out.set(payload, PREFIX);
  return out;
}

/**
 * The least HTTP/1.1 request framing that serves perf_analyzer (libcurl): the head up to its
 * empty line, then a body by Content-Length or by chunked transfer coding, keep-alive, several
 * requests in one read (pipelining) and a request spread over several reads. Nothing is checked
 * beyond what framing needs: this is the floor under tritium's HTTP layer
 * (src/frontends/http/wire/), not a server for untrusted clients.
 *
 * Shared by the floor server (http-floor.mjs), which looks only at the request line, and the
 * recording proxy (record.mjs), which forwards heads and bodies to tritium.
 */

const HEAD_END = Buffer.from('\r\n\r\n');
const MAX_HEAD = 64 * 1024;

/**
 * One connection's request reader. `onRequest(req)` gets each complete request in order:
 * `{ method, target, head, body }` (`head`: the head as latin1 text without its empty line;
 * `body`: the body's pieces, views of the reads, not copies). `onContinue()` is called when a
 * request asks `Expect: 100-continue`, before its body is read.
 */
export class Http1Framer {
  /** Bytes of an unfinished head, chunk-size line or chunk CRLF, kept for the next read. */
  #rest = null;
  /** The head of the request whose body is being read, or null between requests. */
  #req = null;
  /** Content-Length bytes still to read. */
  #need = 0;
  /** Chunked body: 'size' | 'data' | 'crlf' | 'trailer', or null for a Content-Length body. */
  #chunk = null;

  constructor(onRequest, onContinue = () => {}) {
    this.onRequest = onRequest;
    this.onContinue = onContinue;
  }

  /** Consumes one read of the socket; throws on a head it cannot frame. */
  push(chunk) {
    let buf = chunk;
    if (this.#rest !== null) {
      buf = Buffer.concat([this.#rest, chunk]);
      this.#rest = null;
    }
    let i = 0;
    while (i < buf.length) {
      if (this.#req === null) {
        const end = buf.indexOf(HEAD_END, i);
        if (end < 0) {
          if (buf.length - i > MAX_HEAD) throw new Error('request head too long');
          this.#rest = buf.subarray(i);
          return;
        }
        this.#startRequest(buf.toString('latin1', i, end));
        i = end + 4;
      }
      i = this.#chunk === null ? this.#readLength(buf, i) : this.#readChunked(buf, i);
      if (i < 0) return;
    }
  }

  #startRequest(head) {
    const lineEnd = head.indexOf('\r\n');
    const line = lineEnd < 0 ? head : head.slice(0, lineEnd);
    const sp1 = line.indexOf(' ');
    const sp2 = line.lastIndexOf(' ');
    if (sp1 <= 0 || sp2 <= sp1) throw new Error(`bad request line ${JSON.stringify(line)}`);
    this.#req = { method: line.slice(0, sp1), target: line.slice(sp1 + 1, sp2), head, body: [] };
    if (/\r\ntransfer-encoding:[^\r]*chunked/i.test(head)) {
      this.#chunk = 'size';
    } else {
      const cl = /\r\ncontent-length:[ \t]*(\d+)/i.exec(head);
      this.#need = cl ? Number(cl[1]) : 0;
    }
    if (/\r\nexpect:[ \t]*100-continue/i.test(head)) this.onContinue();
  }

  /** Content-Length body from `i`; the index after it, or -1 when the read ended first. */
  #readLength(buf, i) {
    const n = Math.min(this.#need, buf.length - i);
    if (n > 0) this.#req.body.push(buf.subarray(i, i + n));
    this.#need -= n;
    if (this.#need > 0) return -1;
    this.#finish();
    return i + n;
  }

  /** Chunked body from `i` (RFC 9112 §7.1; extensions and trailers skipped); as #readLength. */
  #readChunked(buf, i) {
    while (i < buf.length) {
      if (this.#chunk === 'data') {
        const n = Math.min(this.#need, buf.length - i);
        this.#req.body.push(buf.subarray(i, i + n));
        i += n;
        this.#need -= n;
        if (this.#need === 0) this.#chunk = 'crlf';
        continue;
      }
      if (this.#chunk === 'crlf') {
        if (buf.length - i < 2) break;
        i += 2;
        this.#chunk = 'size';
        continue;
      }
      // A size line or a trailer line: up to its LF.
      const lf = buf.indexOf(0x0a, i);
      if (lf < 0) break;
      const text = buf.toString('latin1', i, lf).replace(/\r$/, '');
      i = lf + 1;
      if (this.#chunk === 'trailer') {
        if (text === '') {
          this.#finish();
          return i;
        }
        continue;
      }
      const size = parseInt(text, 16);
      if (!Number.isFinite(size)) throw new Error(`bad chunk size line ${JSON.stringify(text)}`);
      if (size === 0) this.#chunk = 'trailer';
      else {
        this.#need = size;
        this.#chunk = 'data';
      }
    }
    if (i < buf.length) this.#rest = buf.subarray(i);
    return -1;
  }

  #finish() {
    const req = this.#req;
    this.#req = null;
    this.#chunk = null;
    this.#need = 0;
    this.onRequest(req);
  }
}

/** The canned-table key of a request: method and target, as in `POST /v2/models/add_sub/infer`. */
export function requestKey(method, target) {
  return `${method} ${target}`;
}

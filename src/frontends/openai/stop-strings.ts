/**
 * @module frontends/openai/stop-strings
 * `stop` for models that cannot stop at a string themselves (TensorRT-LLM-style models without
 * a `stop_words` input): the text is cut before the first stop string, and while streaming the
 * tail that could still become one is held back, so no part of a stop string reaches the client.
 */
export class StopStrings {
  private held = '';
  /** A stop string was found: nothing more is to be emitted (the request may be cancelled). */
  stopped = false;

  constructor(private readonly stops: readonly string[]) {}

  /** What of `piece` may be sent now. */
  push(piece: string): string {
    if (this.stopped) return '';
    const buf = this.held + piece;
    let cut = -1;
    for (const s of this.stops) {
      const at = buf.indexOf(s);
      if (at >= 0 && (cut < 0 || at < cut)) cut = at;
    }
    if (cut >= 0) {
      this.stopped = true;
      this.held = '';
      return buf.slice(0, cut);
    }
    const keep = this.partialTail(buf);
    this.held = buf.slice(buf.length - keep);
    return buf.slice(0, buf.length - keep);
  }

  /** At the end of the text: what was held back (it never became a stop string). */
  flush(): string {
    const out = this.held;
    this.held = '';
    return out;
  }

  /** Length of the longest tail of `buf` that is a proper prefix of a stop string. */
  private partialTail(buf: string): number {
    let best = 0;
    for (const s of this.stops) {
      for (let l = Math.min(s.length - 1, buf.length); l > best; l--) {
        if (buf.endsWith(s.slice(0, l))) {
          best = l;
          break;
        }
      }
    }
    return best;
  }
}

/**
 * @module core/trace/tracer
 * Triton-mode tracing (docs/protocol-notes.md, "Trace"): which requests are traced (the
 * effective settings of their model: a level other than OFF, one request in `trace_rate`, at
 * most `trace_count` traces, -1 = no limit; requests are counted from the last settings change
 * and the rate-th is the first traced), and where finished traces go: the trace file as
 * one JSON array, written at shutdown when `log_frequency` is 0, else to `<file>.<n>` every
 * `log_frequency` traces. A trace records what its levels ask (request-trace.ts): TIMESTAMPS,
 * TENSORS or both. Every inference a frontend takes is sampled (infer, ModelStreamInfer per
 * request, generate / generate_stream); ensemble steps and BLS calls made with the request's
 * `trace()` get child traces of a sampled request, outside sampling and `trace_count`, as in
 * Triton. Untraced requests pay one undefined check at each place a trace would record.
 */
import fs from 'node:fs';
import type { TraceSettingsStore } from '../extensions/trace-settings.js';
import { RequestTrace, type TraceOwner } from './request-trace.js';

export class Tracer implements TraceOwner {
  private nextTraceId = 1;
  private seen = new Map<string, number>();
  private finished: RequestTrace[] = [];
  private fileIndex = 0;
  private generation = 0;

  constructor(readonly settings: TraceSettingsStore) {}

  /** A trace for a request to `model`, or undefined when it is not sampled. */
  sample(model: string): RequestTrace | undefined {
    if (!this.settings.enabled) return undefined;
    const s = this.settings.effective(model);
    if (s.trace_level.every((l) => l === 'OFF') || s.trace_file[0] === '') return undefined;
    // Counted from the last settings change; the rate-th request is the first traced (Triton 2.51).
    if (this.generation !== this.settings.generation) {
      this.generation = this.settings.generation;
      this.seen.clear();
    }
    const rate = Number(s.trace_rate[0]);
    const n = (this.seen.get(model) ?? 0) + 1;
    this.seen.set(model, n);
    if (rate > 1 && n % rate !== 0) return undefined;
    if (!this.settings.takeCount(model)) return undefined;
    const level = { timestamps: s.trace_level.includes('TIMESTAMPS'), tensors: s.trace_level.includes('TENSORS') };
    return new RequestTrace(this.nextId(), level, this);
  }

  nextId(): number {
    return this.nextTraceId++;
  }

  finish(t: RequestTrace): void {
    this.finished.push(t);
    const frequency = Number(this.settings.effective('').log_frequency[0]);
    if (frequency > 0 && this.finished.length >= frequency) {
      this.write(`${this.settings.effective('').trace_file[0]}.${this.fileIndex++}`);
    }
  }

  /** Writes what is collected (at shutdown). */
  flush(): void {
    if (this.finished.length === 0) return;
    const frequency = Number(this.settings.effective('').log_frequency[0]);
    const file = this.settings.effective('').trace_file[0]!;
    this.write(frequency > 0 ? `${file}.${this.fileIndex++}` : file);
  }

  private write(file: string): void {
    const entries: string[] = [];
    for (const t of this.finished) for (const e of t.entries) entries.push(e);
    this.finished = [];
    try {
      fs.writeFileSync(file, `[${entries.join(',')}]`);
    } catch {
      // The file was checked writable when tracing was configured; a later failure loses these.
    }
  }
}

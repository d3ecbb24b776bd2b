/**
 * @module core/ensemble/run
 * One ensemble request on its way through the steps (docs/design.md, "Ensembles").
 *
 * Tensors are kept as they arrive: the client's input buffers and each step's output buffers
 * (views of a stub's arena, or of an onnxruntime result) are handed to the next steps as they
 * are, renamed only, and the ensemble's outputs are the producing step's buffers. Nothing is
 * copied here. A step response holding only intermediate tensors is released as soon as no step
 * can read it any more (see `releaseDead`), so a long decoupled stream holds a bounded number of
 * them; responses that hold ensemble outputs go once the request is over and the client has
 * released the ensemble's responses.
 *
 * A step fires as soon as every tensor it reads has a value, so independent branches run at the
 * same time; steps that lead to no requested output are not run (docs/protocol-notes.md,
 * "Ensembles"). Steps go through the InternalClient, the core path of a client request
 * (validation, scheduling, batching, statistics, cancellation).
 *
 * Decoupled steps: every response of a decoupled step is a new value of the tensors it writes,
 * and the steps after it fire once per value. Values carry a *key*: '' for the ensemble's
 * inputs, and a decoupled step fired with key K gives its j-th response the key `K/j`. A step
 * fires once per key of its most derived input (binding.ts guarantees the inputs' lineages form
 * one chain), reading every other input at the prefix of that key its own lineage has; the
 * ensemble answers once per key of its most derived output. So a decoupled step makes the
 * ensemble decoupled, with one response per value reaching the outputs, as in Triton.
 */
import { CancelToken } from '../cancellation.js';
import { Errors, type TritonError } from '../errors.js';
import type { InferResponse, Parameters } from '../inference.js';
import type { InternalClient } from '../internal-client.js';
import type { ExecutionTimes, PendingRequest } from '../scheduling/types.js';
import type { Tensor } from '../tensor.js';
import type { EnsembleBinding } from './binding.js';
import type { EnsemblePlan, PlanStep } from './plan.js';

/** Sums of the composing models' compute phases for this request (the ensemble's own statistics). */
export interface ComputeSums {
  input: bigint;
  infer: bigint;
  output: bigint;
}

export interface RunContext {
  plan: EnsemblePlan;
  binding: EnsembleBinding;
  client: InternalClient;
  /** Accounts one finished request as one execution (before its final response goes out). */
  onExecution(request: PendingRequest, times: ExecutionTimes): void;
}

/** The first `depth` segments of a key ('/0/1' at depth 1 is '/0'). */
const keyPrefix = (key: string, depth: number): string =>
  depth === 0
    ? ''
    : key
        .split('/')
        .slice(0, depth + 1)
        .join('/');

/** Whether key `a` is `b` or one of its ancestors ('' is every key's). */
const keyCovers = (a: string, b: string): boolean => a === '' || a === b || b.startsWith(`${a}/`);

/** A step response whose buffers this request holds, with what it holds them for. */
interface Held {
  release: () => void;
  /** The key its values were stored under. */
  key: string;
  /** The tensors it gave values to. */
  tensors: string[];
  /** One of them is an output of the ensemble: it waits for the client (releaseIfDone). */
  answers: boolean;
}

/** The steps the `wanted` outputs depend on, walking back through the producers. */
function neededSteps(plan: EnsemblePlan, wanted: string[]): boolean[] {
  const needed = plan.steps.map(() => false);
  const pending = [...wanted];
  while (pending.length > 0) {
    const p = plan.producer.get(pending.pop()!);
    if (p === undefined || needed[p]) continue;
    needed[p] = true;
    for (const [, tensor] of plan.steps[p]!.inputs) pending.push(tensor);
  }
  return needed;
}

export class EnsembleRun {
  /** Tensor → key → value. */
  private readonly values = new Map<string, Map<string, Tensor>>();
  /** Per step: the keys it fired for. */
  private readonly fired: Set<string>[];
  /** Keys the ensemble answered for. */
  private readonly answered = new Set<string>();
  /** The step responses whose buffers this request holds. */
  private held: Held[] = [];
  /** Step requests in flight: their firing key and whether the step is decoupled. */
  private readonly running = new Set<{ key: string; decoupled: boolean }>();
  private readonly token = new CancelToken();
  private readonly sums: ComputeSums = { input: 0n, infer: 0n, output: 0n };
  private readonly wanted: string[];
  /** Per step: whether it leads to a requested output (the others never run). */
  private readonly needed: boolean[];
  private readonly params: Parameters;
  private inflight = 0;
  /** Step requests that succeeded, and how many of them reported their compute phases yet. */
  private stepSuccesses = 0;
  private computeReports = 0;
  /** Succeeded, its execution not accounted yet (waiting for its steps' compute phases). */
  private accountPending = false;
  private accountTimer = false;
  /** Ensemble responses the client has not released yet. */
  private clientHolds = 0;
  /** No more steps fire: the request succeeded (its final response may be waiting) or failed. */
  private finished = false;
  /** The final response went out. */
  private closed = false;
  private released = false;

  constructor(
    private readonly ctx: RunContext,
    private readonly pr: PendingRequest,
  ) {
    this.fired = ctx.plan.steps.map(() => new Set());
    const requested = pr.request.outputs?.map((o) => o.name);
    this.wanted = requested && requested.length > 0 ? requested : ctx.plan.outputs;
    this.needed = neededSteps(ctx.plan, this.wanted);
    // The composing models see the client's parameters, as in Triton.
    this.params = pr.request.parameters;
    const signal = pr.request.signal;
    if (signal) signal.addEventListener('abort', () => this.fail(Errors.cancelled()), { once: true });
  }

  start(): void {
    const arrived: string[] = [];
    for (const t of this.pr.request.inputs) {
      this.put(t.name, '', t);
      arrived.push(t.name);
    }
    this.advance(arrived);
    this.settle();
  }

  private put(tensor: string, key: string, value: Tensor): void {
    let byKey = this.values.get(tensor);
    if (!byKey) {
      byKey = new Map();
      this.values.set(tensor, byKey);
    }
    byKey.set(key, value);
  }

  private depth(tensor: string): number {
    return this.ctx.binding.lineage.get(tensor)?.length ?? 0;
  }

  /** The value of `tensor` that belongs with `key`, if it arrived. */
  private valueFor(tensor: string, key: string): Tensor | undefined {
    return this.values.get(tensor)?.get(keyPrefix(key, this.depth(tensor)));
  }

  /** Fires every step, and sends every ensemble response, that the tensors in `arrived` completed. */
  private advance(arrived: string[]): void {
    if (this.finished) return;
    const touched = new Set<number>();
    for (const t of arrived) for (const k of this.ctx.plan.consumers.get(t) ?? []) touched.add(k);
    for (const k of [...touched].sort((a, b) => a - b)) {
      if (!this.needed[k]) continue;
      const step = this.ctx.plan.steps[k]!;
      for (const key of this.candidateKeys(step.inputs.map(([, t]) => t))) {
        if (this.token.aborted) return;
        if (this.fired[k]!.has(key)) continue;
        if (step.inputs.every(([, t]) => this.valueFor(t, key) !== undefined)) {
          this.fired[k]!.add(key);
          this.fire(step, key);
        }
      }
    }
    if (arrived.some((t) => this.wanted.includes(t))) this.answerReady();
  }

  /** The keys of the most derived tensor among `tensors` (the ones a step or the answer can fire for). */
  private candidateKeys(tensors: string[]): string[] {
    let deepest = tensors[0]!;
    for (const t of tensors) if (this.depth(t) > this.depth(deepest)) deepest = t;
    return [...(this.values.get(deepest)?.keys() ?? [])];
  }

  private fire(step: PlanStep, key: string): void {
    const inputs: Tensor[] = step.inputs.map(([input, tensor]) => {
      const v = this.valueFor(tensor, key)!;
      return { name: input, datatype: v.datatype, shape: v.shape, data: v.data };
    });
    const decoupled = this.ctx.binding.decoupledSteps[step.index]!;
    let responses = 0;
    const running = { key, decoupled };
    this.running.add(running);
    this.inflight++;
    this.ctx.client.infer(
      {
        modelName: step.modelName,
        modelVersion: step.modelVersion,
        id: this.pr.request.id,
        parameters: this.params,
        inputs,
        outputs: step.outputs.map(([name]) => ({ name, parameters: {} })),
        signal: this.token,
        // Each step of a traced request is traced as its child (docs/protocol-notes.md, "Trace").
        trace: this.pr.request.trace?.child(),
        onCompute: (input, infer, output) => {
          this.sums.input += input;
          this.sums.infer += infer;
          this.sums.output += output;
          this.computeReports++;
          if (this.accountPending && this.computeReports >= this.stepSuccesses) this.account(3);
        },
      },
      (r: InferResponse) => {
        // Counted before the outputs flow on: the answer they complete waits for this step's compute phases.
        if (r.final && !r.error) this.stepSuccesses++;
        if (r.error) {
          r.release?.();
          this.fail(Errors.ensembleStepFailed(this.ctx.plan.model, r.error));
        } else if (r.flagsOnly || r.outputs.length === 0 || this.finished) {
          r.release?.();
        } else {
          const valueKey = decoupled ? `${key}/${responses++}` : key;
          const arrived: string[] = [];
          for (const out of r.outputs) {
            const tensor = step.outputs.find(([name]) => name === out.name)?.[1];
            if (tensor === undefined) continue;
            this.put(tensor, valueKey, out);
            arrived.push(tensor);
          }
          if (r.release) this.held.push({ release: r.release, key: valueKey, tensors: arrived, answers: arrived.some((t) => this.wanted.includes(t)) });
          this.advance(arrived);
        }
        if (r.final) {
          this.inflight--;
          this.running.delete(running);
          this.settle();
          this.releaseDead();
        }
      },
    );
  }

  /** Sends the ensemble's responses whose outputs are all there. */
  private answerReady(): void {
    if (this.finished) return;
    for (const key of this.candidateKeys(this.wanted)) {
      if (this.answered.has(key)) continue;
      const outputs: Tensor[] = [];
      for (const name of this.wanted) {
        const v = this.valueFor(name, key);
        if (!v) break;
        outputs.push({ name, datatype: v.datatype, shape: v.shape, data: v.data });
      }
      if (outputs.length < this.wanted.length) continue;
      this.answered.add(key);
      if (this.ctx.binding.decoupled) {
        this.send(outputs, false);
      } else {
        this.complete(outputs);
        return;
      }
    }
  }

  /** Nothing can fire any more: a decoupled ensemble closes its stream; a plain one lacked an output. */
  private settle(): void {
    if (this.inflight > 0) return;
    if (!this.finished) {
      if (this.ctx.binding.decoupled) this.complete(undefined);
      else this.fail(Errors.ensembleOutputMissing(this.ctx.plan.model, this.pr.request.id));
    }
    this.releaseIfDone();
  }

  private send(outputs: Tensor[], final: boolean): void {
    this.clientHolds++;
    let once = false;
    this.pr.respond({
      modelName: this.pr.request.modelName,
      modelVersion: '',
      id: this.pr.request.id,
      outputs,
      final,
      release: () => {
        if (once) return;
        once = true;
        this.clientHolds--;
        this.releaseIfDone();
      },
    });
  }

  /** The request succeeded: send the final response, and account the request as one execution. */
  private complete(outputs: Tensor[] | undefined): void {
    this.finished = true;
    this.closed = true;
    if (outputs) {
      this.send(outputs, true);
    } else {
      this.pr.respond({ modelName: this.pr.request.modelName, modelVersion: '', id: this.pr.request.id, outputs: [], final: true, flagsOnly: true });
    }
    this.accountPending = true;
    this.account(0);
    this.releaseIfDone();
  }

  /**
   * A step's compute phases reach its statistics (and `onCompute`) just after its final
   * response, when its execution is recorded (core/stats/model-stats.ts), so the ensemble's
   * execution is accounted once every step that succeeded reported them (from `onCompute`), or
   * after a few turns of the event loop without the missing ones. Its success was recorded with
   * the final response already; the statistics pair the two whichever comes first.
   */
  private account(turns: number): void {
    if (!this.accountPending) return;
    if (this.computeReports < this.stepSuccesses && turns < 3) {
      if (turns > 0 || !this.accountTimer) {
        this.accountTimer = true;
        setImmediate(() => this.account(turns + 1));
      }
      return;
    }
    this.accountPending = false;
    const { input, infer, output } = this.sums;
    this.ctx.onExecution(this.pr, { startNs: 0n, inputEndNs: input, inferEndNs: input + infer, endNs: input + infer + output });
  }

  /** A step failed (or the client cancelled): the request fails with that error, the other steps are cancelled. */
  private fail(error: TritonError): void {
    if (this.finished) return;
    this.finished = true;
    this.closed = true;
    this.token.abort();
    this.pr.fail(error);
    this.releaseIfDone();
  }

  /**
   * Releases the step responses holding only intermediate tensors that no step can read any
   * more. A value stored under key K is read only by steps firing for K or a key below it, and
   * every step that could fire with it has fired as soon as its inputs were there (advance). So
   * it is dead once no step request in flight can still bring a value that pairs with it: none
   * fired for K or below (it reads K, or its decoupled answers will be keyed below K), and no
   * plain one fired for an ancestor of K (its single answer, keyed there, may complete a step
   * that also reads K). A decoupled one fired for an ancestor only adds siblings of K's line.
   */
  private releaseDead(): void {
    if (this.released || this.held.length === 0) return;
    const keep: Held[] = [];
    for (const h of this.held) {
      if (this.mayBeRead(h)) {
        keep.push(h);
        continue;
      }
      for (const t of h.tensors) this.values.get(t)?.delete(h.key);
      h.release();
    }
    this.held = keep;
  }

  private mayBeRead(h: Held): boolean {
    if (h.answers) return true;
    for (const r of this.running) if (keyCovers(h.key, r.key) || (!r.decoupled && keyCovers(r.key, h.key))) return true;
    return false;
  }

  /** Releases the steps' buffers once no step reads them and the client let go of every response. */
  private releaseIfDone(): void {
    if (this.released || !this.closed || this.inflight > 0 || this.clientHolds > 0) return;
    this.released = true;
    for (const h of this.held) h.release();
    this.held.length = 0;
    this.values.clear();
  }
}

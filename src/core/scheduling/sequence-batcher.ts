/**
 * @module core/scheduling/sequence-batcher
 * The sequence batcher (docs/protocol-notes.md, "Sequence batching"): every request of one
 * correlation id goes, in order, to the one batch slot its START request got, on one instance,
 * so a stateful model keeps its state per slot. Sequences beyond the slots wait in a backlog
 * (never dropped) and take the next slot that frees.
 *
 *   enqueue ─► checks (batch size 1, an id, START first) ─► id → slot ─► slot FIFO ─┐
 *                                           no free slot ─► backlog (FIFO) ─────────┤
 *   direct: one batch per instance, one row per slot (idle slots get a null filler) ◄┘
 *   oldest: each slot offers its head; the oldest heads of an instance form a batch
 *
 * The model sees each request's control tensors (START, END, READY, CORRID) added to its
 * inputs, and `correlation_id()` / `flags()` in Python. A sequence that sends nothing for
 * max_sequence_idle_microseconds loses its slot once its queued requests ran; its next request
 * without START is refused. One timer serves idle sequences and backlog deadlines; `direct`'s
 * queue delay has one per instance. Nothing else runs while no sequence is live.
 */
import { SchedulerHold } from './scheduler-hold.js';
import { asTritonError, Errors, type TritonError } from '../errors.js';
import type { Tensor } from '../tensor.js';
import { InstancePool } from './instance-pool.js';
import { PumpGuard } from './pump-guard.js';
import type { RateLimiter } from './rate-limiter.js';
import { Ring } from './queue.js';
import {
  ControlTensors,
  corridTypeName,
  type CorrelationId,
  FillerRequest,
  FLAG_END,
  FLAG_START,
  isNoSequence,
  type SequenceBatchingOptions,
  type SequenceStateValues,
  stateInputs,
} from './sequence-controls.js';
import type { DispatchObserver, ExecutionInstance, ExecutionObserver, ExecutionTimes, PendingRequest, Scheduler } from './types.js';
import { traceLine, traceTags, traced } from '../trace-tags.js';

/** One request of a sequence as the batcher holds it. */
interface Entry {
  readonly pr: PendingRequest;
  readonly id: CorrelationId;
  /** START/END as the model sees them on the next execution (0 once rescheduled). */
  flags: number;
  /** The inputs the client sent; controls are added to a copy at each dispatch. */
  readonly base: Tensor[];
  /** The model released it with RESCHEDULE during its last execution (iterative sequences). */
  rescheduled: boolean;
}

/** Queued after a sequence's last request when it went idle: the slot frees when it reaches the head. */
const IDLE = Symbol('idle');

class Slot {
  readonly queue = new Ring<Entry | typeof IDLE>(4);
  /** The sequence that holds the slot; undefined while free. */
  key: CorrelationId | undefined = undefined;
  /** `oldest`: a request of this slot was handed to the instance and is not done. */
  busy = false;
  /** The last arrival of the slot's sequence (hrtime ns), for the idle timeout. */
  seen = 0n;
  /** The implicit state of the sequence in the slot (models with `state`). */
  readonly state: SequenceStateValues = new Map();
  constructor(
    readonly instance: number,
    readonly index: number,
  ) {}
}

/** A sequence waiting for a slot. */
class Backlogged {
  readonly entries: Entry[] = [];
  /** The last arrival of the sequence (hrtime ns). */
  seen = 0n;
  constructor(readonly key: CorrelationId) {}
}

/** How often a backlogged sequence past its idle time is looked at again (it is never reaped). */
const BACKLOG_RECHECK_NS = 50_000_000n;

export class SequenceBatcher implements Scheduler {
  private readonly pool: InstancePool;
  private readonly instances: readonly ExecutionInstance[];
  private readonly controls: ControlTensors;
  /** slots[instance][index]. */
  private readonly slots: Slot[][];
  /**
   * Where each live sequence is: its slot, or its place in the backlog. Keyed by the id itself:
   * a Map compares bigints and strings by value, and 42n and '42' never meet.
   */
  private readonly where = new Map<CorrelationId, Slot | Backlogged>();
  /** Sequences whose instance died, so their next request says why (until idle). */
  private readonly lost = new Map<CorrelationId, { at: bigint; instance: string; why: string }>();
  private readonly backlog: Backlogged[] = [];
  private readonly idleMs: number;
  private readonly idleNs: bigint;
  private readonly maxRows: number;
  /** `oldest`: the largest preferred batch size (max_batch_size without any). */
  private readonly maxPreferred: number;
  private readonly batching: boolean;
  private queued = 0;
  private stopped = false;
  private nextAutoId = 1n;
  private reaper: NodeJS.Timeout | undefined;
  private reaperAt = Infinity;
  /** Per instance: the timer of a batch held back by a queue delay. */
  private readonly delayTimers: Array<NodeJS.Timeout | undefined>;
  private readonly guard = new PumpGuard();
  /** TRITONSERVER_DELAY_SCHEDULER and its backlog twin (scheduler-hold.ts), until met. */
  private hold = SchedulerHold.fromEnv();
  private readonly retryPump = (): void => this.pump();

  constructor(
    private readonly model: string,
    instances: readonly ExecutionInstance[],
    private readonly o: SequenceBatchingOptions,
    private readonly observer: ExecutionObserver,
    onDispatch?: DispatchObserver,
    limiter?: RateLimiter,
  ) {
    this.instances = instances.slice();
    this.controls = new ControlTensors(o.controls, o.maxBatchSize);
    this.idleMs = o.idleUs / 1000;
    this.idleNs = BigInt(Math.round(o.idleUs * 1000));
    this.maxRows = Math.max(1, o.maxBatchSize);
    this.batching = o.maxBatchSize > 0;
    const preferred = o.strategy.kind === 'oldest' ? o.strategy.preferredBatchSizes : [];
    this.maxPreferred = preferred.reduce((a, b) => Math.max(a, b), 0) || this.maxRows;
    const perInstance = o.strategy.kind === 'direct' ? this.maxRows : o.strategy.candidates;
    this.slots = this.instances.map((_, i) => Array.from({ length: perInstance }, (_x, s) => new Slot(i, s)));
    this.delayTimers = this.instances.map(() => undefined);
    // One batch in flight per instance: a slot's next request must see the state its previous
    // one left, and a direct batch is formed from what the slots hold when the instance frees.
    this.pool = new InstancePool(
      this.instances,
      (batch, times, rows) => this.executed(batch, times, rows),
      () => this.pump(),
      false,
      onDispatch,
      limiter,
    );
  }

  enqueue(pr: PendingRequest): void {
    if (this.stopped) {
      pr.fail(Errors.schedulerStopped());
      return;
    }
    try {
      this.admit(pr);
    } catch (err) {
      const e = asTritonError(err);
      if (traceTags.batcher) traceLine('batcher', `${this.model}: ${traced(pr.request)} refused: ${e.message}`);
      pr.fail(e);
      return;
    }
    this.pump();
  }

  pendingCount(): number {
    return this.queued;
  }

  kick(): void {
    this.pump();
  }

  /**
   * Instance `instance` died (its stub crashed or was restarted): the state of every sequence
   * it held is gone. Their queued requests fail, their slots free for the backlog, and their
   * next request without START says why.
   */
  instanceDown(instance: ExecutionInstance, why: string): void {
    const i = this.instances.indexOf(instance);
    if (i < 0) return;
    const at = process.hrtime.bigint();
    for (const slot of this.slots[i]!) {
      const key = slot.key;
      if (key === undefined) continue;
      for (const e of slot.queue.drain()) {
        if (e === IDLE) continue;
        this.queued--;
        if (!e.pr.done) e.pr.fail(Errors.sequenceInstanceLost(String(e.id), this.model, instance.name, why));
      }
      if (this.where.get(key) === slot) {
        this.where.delete(key);
        this.lost.set(key, { at, instance: instance.name, why });
      }
      if (traceTags.batcher) traceLine('batcher', `${this.model}: sequence ${String(key)} lost with instance ${instance.name}`);
      slot.busy = false;
      this.freeSlot(slot);
    }
    this.armReaper(this.idleMs);
    this.pump();
  }

  stop(error: TritonError = Errors.schedulerStopped()): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.reaper !== undefined) clearTimeout(this.reaper);
    this.hold?.stop();
    for (let i = 0; i < this.delayTimers.length; i++) {
      const t = this.delayTimers[i];
      if (t !== undefined) clearTimeout(t);
      this.delayTimers[i] = undefined;
    }
    for (const slots of this.slots) {
      for (const slot of slots) for (const e of slot.queue.drain()) if (e !== IDLE && !e.pr.done) e.pr.fail(error);
    }
    for (const b of this.backlog.splice(0)) for (const e of b.entries) if (!e.pr.done) e.pr.fail(error);
    this.queued = 0;
    this.where.clear();
  }

  // --- Admission and routing ----------------------------------------------------------------

  /** Triton's checks, in its order; returns the entry to route or throws the refusal. */
  private admit(pr: PendingRequest): void {
    // Read directly: the model version has checked these parameters' types already
    // (core/request/parameters.ts), and this runs for every request.
    const params = pr.request.parameters;
    const sid = params.sequence_id;
    let id: CorrelationId = typeof sid === 'string' ? sid : typeof sid === 'bigint' ? sid : typeof sid === 'number' ? BigInt(sid) : 0n;
    let flags = (params.sequence_start === true ? FLAG_START : 0) | (params.sequence_end === true ? FLAG_END : 0);
    const corrid = this.controls.corrid;
    if (corrid !== undefined && (typeof id === 'string') !== (corrid.datatype === 'BYTES')) {
      const prefix = pr.request.id !== '' ? `[request id: ${pr.request.id}] ` : '';
      throw Errors.sequenceCorridType(prefix, corrid.name, corridTypeName(id), this.model, corrid.datatype);
    }
    if (pr.batchSize > 1) throw Errors.sequenceBatchSize(this.model);
    if (isNoSequence(id)) {
      if (!this.o.iterative) throw Errors.sequenceIdMissing(this.model);
      // An iterative model's request without an id starts a sequence of its own.
      id = typeof id === 'string' ? String(this.nextAutoId++) : this.nextAutoId++;
      flags |= FLAG_START;
    }
    const at = this.where.get(id);
    if ((flags & FLAG_START) === 0 && at === undefined) {
      const lost = this.lost.get(id);
      if (lost !== undefined) throw Errors.sequenceInstanceLost(String(id), this.model, lost.instance, lost.why);
      throw Errors.sequenceStartMissing(String(id), this.model);
    }
    const entry: Entry = { pr, id, flags, base: pr.request.inputs, rescheduled: false };
    if (this.o.iterative && (flags & FLAG_END) === 0) pr.reschedule = () => this.requeue(entry);
    this.route(entry, at);
  }

  /** Puts an admitted request where its sequence is (`at`), or gives a new sequence a place. */
  private route(e: Entry, found: Slot | Backlogged | undefined): void {
    const key = e.id;
    let at = found;
    if (at !== undefined && (e.flags & FLAG_START) !== 0) {
      // Triton joins a START on a live id to the running sequence: the model sees START again.
      if (traceTags.batcher) traceLine('batcher', `${this.model}: sequence ${String(e.id)} started again before it ended; the previous one is ended early`);
    }
    if ((e.flags & FLAG_START) !== 0) this.lost.delete(key);
    this.queued++;
    if (at === undefined) {
      const slot = this.freeSlotFor();
      if (slot !== undefined) {
        slot.key = key;
        at = slot;
      } else {
        at = new Backlogged(key);
        this.backlog.push(at);
      }
      // A one-request sequence (START and END together) needs no mapping.
      if ((e.flags & FLAG_END) === 0) this.where.set(key, at);
    }
    if (at instanceof Slot) at.queue.push(e);
    else at.entries.push(e);
    if ((e.flags & FLAG_END) !== 0) {
      // The id is free at once: its next request needs START, even before this one runs.
      if (this.where.get(key) === at) this.where.delete(key);
    } else {
      // The request's arrival stamp: no clock read here. Arrivals only move later, so an armed
      // reaper is never too late for this one.
      at.seen = e.pr.arrivalNs;
      if (this.reaper === undefined) this.armReaper(this.idleMs);
    }
    if (e.pr.timeoutUs > 0 && at instanceof Backlogged) this.armReaper(e.pr.timeoutUs / 1000);
    if (traceTags.batcher) {
      const place =
        at instanceof Slot ? `slot ${at.index} of instance ${this.instances[at.instance]!.name}` : `the backlog (${this.backlog.length} sequence(s) waiting)`;
      traceLine('batcher', `${this.model}: ${traced(e.pr.request)} of sequence ${String(e.id)} (flags ${e.flags}) queued in ${place}`);
    }
  }

  /** A rescheduled iteration goes back behind its sequence's queued requests. */
  private requeue(e: Entry): void {
    e.rescheduled = true;
    e.flags = 0;
    const at = this.where.get(e.id);
    if (this.stopped) {
      e.pr.fail(Errors.schedulerStopped());
      return;
    }
    if (at === undefined) {
      // The sequence was released meanwhile (idle): Triton's enqueue error becomes the answer.
      e.pr.fail(Errors.sequenceStartMissing(String(e.id), this.model));
      return;
    }
    at.seen = process.hrtime.bigint();
    this.queued++;
    if (at instanceof Slot) at.queue.push(e);
    else at.entries.push(e);
    // The instance is still running the batch it came from; the pump after it dispatches it.
  }

  /** The free slot a new sequence gets: the lowest index, on a ready instance first. */
  private freeSlotFor(): Slot | undefined {
    let fallback: Slot | undefined;
    const n = this.slots[0]?.length ?? 0;
    for (let s = 0; s < n; s++) {
      for (let i = 0; i < this.slots.length; i++) {
        const slot = this.slots[i]![s]!;
        if (slot.key !== undefined || slot.queue.length > 0) continue;
        if (this.instances[i]!.isReady()) return slot;
        fallback ??= slot;
      }
    }
    return fallback;
  }

  /** The slot's sequence is over: the oldest backlogged sequence takes it, or it becomes free. */
  private freeSlot(slot: Slot): void {
    slot.key = undefined;
    slot.state.clear();
    while (this.backlog.length > 0) {
      const b = this.backlog.shift()!;
      if (b.entries.some((e) => e.pr.cancelled)) {
        // A cancelled request cancels its whole waiting sequence (Triton's rule).
        this.dropBacklogged(b, Errors.cancelled());
        continue;
      }
      slot.key = b.key;
      slot.seen = b.seen;
      for (const e of b.entries) slot.queue.push(e);
      if (this.where.get(b.key) === b) this.where.set(b.key, slot);
      if (traceTags.batcher)
        traceLine(
          'batcher',
          `${this.model}: sequence ${String(b.key)} leaves the backlog for slot ${slot.index} of instance ${this.instances[slot.instance]!.name}`,
        );
      return;
    }
  }

  private dropBacklogged(b: Backlogged, error: TritonError): void {
    for (const e of b.entries) {
      this.queued--;
      if (!e.pr.done) e.pr.fail(e.pr.cancelled ? Errors.cancelled() : error);
    }
    b.entries.length = 0;
    if (this.where.get(b.key) === b) this.where.delete(b.key);
  }

  /** Cancelled at the head: the rest of the sequence is cancelled too, and its slot freed. */
  private cancelSlot(slot: Slot): void {
    const key = slot.key;
    for (const e of slot.queue.drain()) {
      if (e === IDLE) continue;
      this.queued--;
      if (!e.pr.done) e.pr.fail(Errors.cancelled());
    }
    if (key !== undefined && this.where.get(key) === slot) this.where.delete(key);
    if (traceTags.batcher) traceLine('batcher', `${this.model}: sequence ${String(key)} cancelled; slot ${slot.index} freed`);
    this.freeSlot(slot);
  }

  // --- Dispatch ------------------------------------------------------------------------------

  private pump(): void {
    this.guard.run(this.pass);
  }

  /** Requests waiting in the backlog (for the QA hold only). */
  private backlogged(): number {
    return this.backlog.reduce((n, b) => n + b.entries.length, 0);
  }

  private readonly pass = (): void => {
    if (this.stopped) return;
    if (this.hold?.holds(this.queued, this.backlogged(), this.retryPump)) return;
    this.hold = undefined;
    for (let i = 0; i < this.instances.length; i++) {
      if (!this.pool.canTake(i)) continue;
      if (this.o.strategy.kind === 'direct') this.direct(i);
      else this.oldest(i);
    }
  };

  /**
   * Clears what cannot run from the head of a slot (an idle marker, answered or cancelled
   * requests) and returns its head, or undefined when nothing is ready.
   */
  private head(slot: Slot): Entry | undefined {
    for (;;) {
      const h = slot.queue.peek();
      if (h === undefined) return undefined;
      if (h === IDLE) {
        slot.queue.shift();
        if (slot.queue.length === 0) {
          if (traceTags.batcher) traceLine('batcher', `${this.model}: idle sequence ${String(slot.key)} released slot ${slot.index}`);
          this.freeSlot(slot);
        }
        continue;
      }
      if (h.pr.done) {
        slot.queue.shift();
        this.queued--;
        continue;
      }
      if (h.pr.cancelled) {
        this.cancelSlot(slot);
        continue;
      }
      return h;
    }
  }

  /** `direct`: one row per slot up to the highest ready one; empty rows get a filler. */
  private direct(i: number): void {
    const slots = this.slots[i]!;
    let rep: Entry | undefined;
    let earliest = 0n;
    let ready = 0;
    let last = -1;
    for (let s = 0; s < slots.length; s++) {
      const h = this.head(slots[s]!);
      if (h === undefined) continue;
      if (rep === undefined || h.pr.arrivalNs < earliest) earliest = h.pr.arrivalNs;
      rep ??= h;
      ready++;
      last = s;
    }
    if (rep === undefined) return;
    const strategy = this.o.strategy as Extract<SequenceBatchingOptions['strategy'], { kind: 'direct' }>;
    const now = process.hrtime.bigint();
    if (strategy.maxQueueDelayUs > 0 && strategy.minimumSlotUtilization > 0) {
      // Both knobs set (Triton uses the delay only then): wait for more slots to fill.
      const waitedUs = Number(now - earliest) / 1000;
      if (waitedUs <= strategy.maxQueueDelayUs && ready / this.maxRows < strategy.minimumSlotUtilization) {
        this.delay(i, (strategy.maxQueueDelayUs - waitedUs) / 1000);
        return;
      }
    }
    // Under the rate limiter the instance runs only once its resources are granted.
    if (!this.pool.grant(i)) return;
    const handed: PendingRequest[] = [];
    const real: PendingRequest[] = [];
    for (let s = 0; s <= last; s++) {
      const slot = slots[s]!;
      const h = slot.queue.peek();
      if (h === undefined || h === IDLE || h.pr.shapeSignature !== rep.pr.shapeSignature) {
        handed.push(new FillerRequest(rep.pr, rep.base, rep.pr.shapeSignature, this.controls, stateInputs(this.o.states, undefined, this.batching)));
        continue;
      }
      slot.queue.shift();
      this.queued--;
      this.prepare(h, slot, now);
      handed.push(h.pr);
      real.push(h.pr);
      if ((h.flags & FLAG_END) !== 0) this.endInSlot(slot);
    }
    this.run(i, real, handed);
  }

  /** `oldest`: the heads of the slots with nothing running, oldest first, as the batch. */
  private oldest(i: number): void {
    const strategy = this.o.strategy as Extract<SequenceBatchingOptions['strategy'], { kind: 'oldest' }>;
    const heads: Array<{ slot: Slot; e: Entry }> = [];
    for (const slot of this.slots[i]!) {
      if (slot.busy) continue;
      const h = this.head(slot);
      if (h !== undefined) heads.push({ slot, e: h });
    }
    if (heads.length === 0) return;
    heads.sort((a, b) => (a.e.pr.arrivalNs < b.e.pr.arrivalNs ? -1 : a.e.pr.arrivalNs > b.e.pr.arrivalNs ? 1 : 0));
    // Requests with another shape than the oldest wait for a later batch (as the dynamic batcher).
    const sig = heads[0]!.e.pr.shapeSignature;
    let rows = heads.filter((h) => h.e.pr.shapeSignature === sig);
    const now = process.hrtime.bigint();
    const maxPreferred = this.maxPreferred;
    if (rows.length > this.maxRows) rows = rows.slice(0, this.maxRows);
    if (rows.length < maxPreferred && strategy.maxQueueDelayUs > 0 && !strategy.preferredBatchSizes.includes(rows.length)) {
      const waitedUs = Number(now - rows[0]!.e.pr.arrivalNs) / 1000;
      if (waitedUs < strategy.maxQueueDelayUs) {
        this.delay(i, (strategy.maxQueueDelayUs - waitedUs) / 1000);
        return;
      }
    } else if (rows.length > maxPreferred) {
      // The largest preferred size that fits, as the dynamic batcher sends.
      const fit = strategy.preferredBatchSizes.filter((p) => p <= rows.length).reduce((a, b) => Math.max(a, b), 0);
      if (fit > 0) rows = rows.slice(0, fit);
    }
    if (!this.pool.grant(i)) return;
    const batch: PendingRequest[] = [];
    for (const { slot, e } of rows) {
      slot.queue.shift();
      this.queued--;
      this.prepare(e, slot, now);
      slot.busy = true;
      this.slotByRequest.set(e.pr, slot);
      batch.push(e.pr);
      if ((e.flags & FLAG_END) !== 0) this.endInSlot(slot);
    }
    this.run(i, batch, batch);
  }

  /** Controls, state and the sequence tag for this execution. */
  private prepare(e: Entry, slot: Slot, now: bigint): void {
    e.rescheduled = false;
    e.pr.queueEndNs = now;
    const states = this.o.states;
    // START begins from the initial state, even on a slot whose previous sequence left one.
    if ((e.flags & FLAG_START) !== 0) slot.state.clear();
    e.pr.sequence = { id: e.id, flags: e.flags, state: states.length > 0 ? slot.state : undefined };
    if (e.pr.reschedule !== undefined) this.entries.set(e.pr, e);
    if (this.controls.any || states.length > 0) {
      e.pr.request.inputs = [...e.base, ...this.controls.build(e.flags, true, e.id), ...stateInputs(states, slot.state, this.batching)];
    }
  }

  /** The END request left the slot: the slot is the next sequence's (its queue is empty now). */
  private endInSlot(slot: Slot): void {
    if (slot.key !== undefined && this.where.get(slot.key) === slot) this.where.delete(slot.key);
    if (slot.queue.length === 0) this.freeSlot(slot);
  }

  private run(i: number, real: PendingRequest[], handed: PendingRequest[]): void {
    const t = this.delayTimers[i];
    if (t !== undefined) {
      clearTimeout(t);
      this.delayTimers[i] = undefined;
    }
    if (traceTags.batcher) {
      const fillers = handed.length - real.length;
      traceLine(
        'batcher',
        `${this.model}: batch of ${handed.length} handed to instance ${this.pool.nameOf(i)}: ${real.map((r) => traced(r.request)).join(', ')}${fillers > 0 ? ` and ${fillers} filler(s)` : ''}`,
      );
    }
    this.pool.run(i, real, handed, handed.length);
  }

  /** An execution finished: `oldest` slots take their next request; an iterative sequence that was not rescheduled ends. */
  private executed(batch: PendingRequest[], times: ExecutionTimes, rows: number): void {
    this.observer(batch, times, rows);
    for (const pr of batch) {
      const slot = this.slotOf(pr);
      if (slot === undefined) continue;
      slot.busy = false;
    }
    if (this.o.iterative) {
      for (const pr of batch) {
        if (pr.reschedule === undefined || (pr.sequence!.flags & FLAG_END) !== 0) continue;
        // Released without RESCHEDULE: the iterative sequence is over and its slot frees.
        const entry = this.entries.get(pr);
        if (entry === undefined || entry.rescheduled) continue;
        this.entries.delete(pr);
        const at = this.where.get(entry.id);
        if (at instanceof Slot) {
          this.where.delete(entry.id);
          at.queue.push(IDLE);
        }
      }
    }
  }

  /** Entries by request while one is handed to an instance (iterative models and `oldest` need it back). */
  private readonly entries = new Map<PendingRequest, Entry>();
  private readonly slotByRequest = new Map<PendingRequest, Slot>();

  private slotOf(pr: PendingRequest): Slot | undefined {
    const s = this.slotByRequest.get(pr);
    if (s !== undefined) this.slotByRequest.delete(pr);
    return s;
  }

  private delay(i: number, ms: number): void {
    if (this.delayTimers[i] !== undefined) return;
    const t = setTimeout(
      () => {
        this.delayTimers[i] = undefined;
        this.pump();
      },
      Math.max(0, ms),
    );
    t.unref();
    this.delayTimers[i] = t;
  }

  // --- Idle sequences and backlog deadlines ------------------------------------------------

  /** Arms the reaper to run in `ms` (or keeps it, if it runs sooner). */
  private armReaper(ms: number): void {
    if (this.stopped) return;
    const at = performance.now() + ms;
    if (at >= this.reaperAt) return;
    if (this.reaper !== undefined) clearTimeout(this.reaper);
    this.reaperAt = at;
    this.reaper = setTimeout(() => this.reap(), Math.max(0, ms));
    this.reaper.unref();
  }

  private reap(): void {
    this.reaper = undefined;
    this.reaperAt = Infinity;
    const now = process.hrtime.bigint();
    const idle = this.idleNs;
    let next: bigint | undefined;
    const soonest = (t: bigint) => {
      if (next === undefined || t < next) next = t;
    };
    let released = false;
    for (const [key, at] of this.where) {
      const seen = at.seen;
      if (now - seen < idle) {
        soonest(seen + idle);
        continue;
      }
      if (at instanceof Slot) {
        // Its queued requests still run; then the slot frees. The model never sees END.
        this.where.delete(key);
        at.queue.push(IDLE);
        released = true;
        if (traceTags.batcher)
          traceLine('batcher', `${this.model}: sequence ${String(key)} idle for ${Number((now - seen) / 1_000_000n)} ms: releasing slot ${at.index}`);
      } else {
        // A waiting sequence is not its client's fault: never reaped, looked at again soon.
        soonest(now + BACKLOG_RECHECK_NS);
      }
    }
    for (const [key, l] of this.lost) {
      if (now - l.at >= idle) this.lost.delete(key);
      else soonest(l.at + idle);
    }
    // A backlogged sequence expires at its earliest request deadline (the `timeout` parameter).
    for (let b = 0; b < this.backlog.length; b++) {
      const q = this.backlog[b]!;
      let deadline: bigint | undefined;
      for (const e of q.entries) {
        if (e.pr.timeoutUs === 0) continue;
        const d = e.pr.arrivalNs + BigInt(e.pr.timeoutUs) * 1000n;
        if (deadline === undefined || d < deadline) deadline = d;
      }
      if (deadline === undefined) continue;
      if (deadline <= now) {
        this.backlog.splice(b--, 1);
        this.dropBacklogged(q, Errors.sequenceBacklogTimeout());
      } else soonest(deadline);
    }
    if (next !== undefined) this.armReaper(Number(next - now) / 1e6);
    if (released) this.pump();
  }
}

"""The stub's life: hello, then autocomplete or init/exec/release/fin (docs/ipc.md)."""

import functools
import json
import os
import time

import c_python_backend_utils
import triton_python_backend_utils as pb_utils

from . import async_loop, bls, logging_bridge, metrics, model_control, objects, parent_watch, readiness
from .errors import format_exception
from .inbox import Inbox
from .ipc import Channel
from .loader import StubError, import_model
from .logger import emit
from .memfd import segment_fds_setting
from .messages import (
    AUTOCOMPLETE,
    AUTOCOMPLETE_ERR,
    AUTOCOMPLETE_OK,
    BLS_R,
    EXEC,
    EXEC_DONE,
    FIN,
    FIN_DONE,
    INIT,
    INIT_ERR,
    INIT_OK,
    LOGLEVEL,
    METRIC_R,
    MODEL_CTL_R,
    RELEASE,
)
from .request import received
from .response_sender import close_all
from .result import answer_later, build_resps
from .state import STATE


def _error_text(exc):
    # Our own errors are reported verbatim, Python exceptions as pybind renders them.
    return str(exc) if isinstance(exc, StubError) else format_exception(exc)


class Runtime:
    def __init__(self, model_file, name, mode, log_verbose, channel=None, ready_fd=None):
        STATE.model_file = model_file
        STATE.version_dir = os.path.dirname(model_file)
        STATE.name = name
        STATE.log_verbose = log_verbose
        if channel is not None:
            STATE.channel = channel
        self.mode = mode
        # Node's readiness pipe (readiness.py); used only when the model defines is_ready.
        self.ready_fd = ready_fd
        self.model = None
        self.execute = None

    def serve(self):
        """Answer messages until told to stop; returns the exit status."""
        channel = STATE.channel  # Channel() already sent {t:"hello", pid}
        if self.mode == "autocomplete":
            return self._serve_autocomplete(channel)
        return self._serve_instance(channel)

    # -- auto-complete stub ------------------------------------------------------------------

    def _serve_autocomplete(self, channel):
        while True:
            msg = channel.recv()
            if msg is None:
                continue
            if msg["t"] == AUTOCOMPLETE:
                channel.send(self._autocomplete(msg["config"]))
                return 0
            if msg["t"] == FIN:
                channel.send({"t": FIN_DONE})
                return 0
            emit("WARNING", f"auto-complete stub ignored message '{msg['t']}'", "runtime.py", 0)

    def _autocomplete(self, config_json):
        try:
            model_class = import_model(STATE.model_file, STATE.runtime_dir).TritonPythonModel
            config = pb_utils.ModelConfig(config_json)
            if hasattr(model_class, "auto_complete_config"):
                config = model_class.auto_complete_config(config)
            if not isinstance(config, pb_utils.ModelConfig):
                raise StubError(
                    f"auto_complete_config function in model '{STATE.name}' must return a valid pb.ModelConfig object."
                )
            return {"t": AUTOCOMPLETE_OK, "config": json.dumps(config._model_config)}
        except (Exception, SystemExit) as e:
            return {"t": AUTOCOMPLETE_ERR, "msg": _error_text(e)}

    # -- instance stub -----------------------------------------------------------------------

    @staticmethod
    def _route(msg):
        """Answers to calls the model made (BLS, model control) go to their waiters; the inbox
        holds its condition here. Releases of output blocks are applied by whichever thread read
        them, so blocks come back during a long execute too (Inbox.poll). Everything else is the
        main loop's."""
        kind = msg["t"]
        if kind == RELEASE:
            Runtime._release(STATE.channel, msg["blocks"])
            return True
        if kind == EXEC:
            released = msg.pop("rel", None)
            if released:
                Runtime._release(STATE.channel, released)
            return False
        if kind == BLS_R:
            bls.route_answer(msg)
            return True
        if kind == MODEL_CTL_R:
            model_control.route_answer(msg)
            return True
        if kind == METRIC_R:
            metrics.route_answer(msg)
            return True
        return False

    def _serve_instance(self, channel):
        inbox = STATE.inbox = Inbox(channel.recv, self._route)
        # An output that finds the arena full first takes the releases Node already sent.
        channel.reclaim = inbox.poll
        recv = inbox.next_for_main
        execute_batch = self._exec
        while True:
            msg = recv()
            kind = msg["t"]
            if kind == EXEC:
                execute_batch(msg)
            elif kind == INIT:
                if not self._init(msg["args"], msg.get("async_limit"), msg.get("concurrent_executes")):
                    return 0
            elif kind == FIN:
                self._fin()
                return 0
            elif kind == LOGLEVEL:
                # The server's --log-verbose changed (POST /v2/logging, gRPC LogSettings).
                STATE.log_verbose = int(msg["verbose"])
            else:
                emit("WARNING", f"stub ignored unknown message '{kind}'", "runtime.py", 0)

    @staticmethod
    def _release(channel, blocks):
        free_many = getattr(channel, "free_many", None)
        if free_many is not None:
            errors = free_many(blocks)
        else:
            errors = []
            for segment, offset in blocks:
                try:
                    channel.free(segment, offset)
                except ValueError as e:
                    errors.append(e)
        for e in errors:  # a Node bug must not take the instance down
            emit("WARNING", f"release of an unknown output block: {e}", "runtime.py", 0)

    def _init(self, args, async_limit=None, concurrent_executes=None):
        channel = STATE.channel
        if async_limit is not None:
            async_loop.configure(async_limit)
        if concurrent_executes is not None:
            async_loop.configure_concurrent(concurrent_executes)
        try:
            model_class = import_model(STATE.model_file, STATE.runtime_dir).TritonPythonModel
            config = json.loads(args["model_config"])
            STATE.decoupled = bool(pb_utils.using_decoupled_model_transaction_policy(config))
            STATE.config_outputs = frozenset(o["name"] for o in config.get("output", ()))
            self.model = model_class()
            # Bound once: the per-batch path then costs no attribute lookup.
            self.execute = getattr(self.model, "execute", None)
            if hasattr(self.model, "initialize"):
                self.model.initialize(args)
        except (Exception, SystemExit) as e:
            channel.send({"t": INIT_ERR, "msg": _error_text(e)})
            return False
        STATE.initialized = True
        # Whether the model has its own readiness check is known once, after initialize (as in
        # Triton); only then does a thread wait for readiness requests.
        done = {"t": INIT_OK}
        if self.ready_fd is not None and readiness.has_ready_fn(self.model):
            readiness.start(self.ready_fd, self.model, channel)
            done["ready_fn"] = True
        channel.send(done)
        return True

    def _exec(self, msg):
        started = time.perf_counter_ns()
        channel = STATE.channel
        # Its `rel` (output blocks Node is done with) was applied when it was read (_route).
        requests = received(msg["reqs"])
        STATE.running_reqs = msg["reqs"]
        done = {"t": EXEC_DONE, "id": msg["id"]}
        try:
            execute = self.execute
            if execute is None:
                raise StubError(f"Python model {STATE.model_file} does not implement `execute` method.")
            returned = execute(requests)
            if returned is not None and type(returned) is not list and async_loop.is_coroutine(returned):
                if STATE.decoupled:
                    async_loop.run_in_background(returned)
                    returned = None
                elif async_loop.concurrent():
                    # Answered when it ends (result.answer_later); the instance takes more now.
                    async_loop.run_concurrently(
                        returned, functools.partial(answer_later, requests, error_text=_error_text)
                    )
                    returned = None
                else:
                    returned = async_loop.run(returned)
            done["resps"], again = build_resps(channel, requests, returned)
            if again is not None:
                done["resched"] = again
        except (Exception, SystemExit) as e:
            text = f"Failed to process the request(s) for model '{STATE.name}', message: {_error_text(e)}"
            emit("ERROR", text, "runtime.py", 0)
            # Node fails every request not yet closed; later sends must fail like in Triton.
            close_all([r._slot for r in requests])
            done["err"] = text
            done["resps"] = []
        # The batch's objects go first, so BLS outputs only they referenced are handed back now.
        requests = returned = None
        bls.flush_freed()
        # Node judges how deep to pipeline on this, not on its own send-to-answer time, which
        # also holds this process's wake-up and Node's delay in reading the answer: on a busy
        # host those made a 10 µs model look long (docs/design.md, "Pipelining").
        done["ns"] = time.perf_counter_ns() - started
        channel.send(done)

    def _fin(self):
        channel = STATE.channel
        STATE.finalizing = True
        channel.send({"t": FIN_DONE})
        async_loop.stop()
        if self.model is not None and STATE.initialized and hasattr(self.model, "finalize"):
            try:
                self.model.finalize()
            except (Exception, SystemExit) as e:
                emit("INFO", format_exception(e), "runtime.py", 0)


WAKE_FD_ENV = "TRITIUM_STUB_WAKE_FD"


def wake_fd_setting(env):
    """The descriptor Node's wake eventfd was inherited as (docs/ipc.md, "Waking Node"); None
    without one (the test emulator of Node, which sleeps on ring B's futex instead)."""
    raw = env.get(WAKE_FD_ENV)
    return int(raw) if raw else None


SPIN_US_ENV = "TRITIUM_STUB_SPIN_US"
SPIN_MODE_ENV = "TRITIUM_STUB_SPIN_MODE"


def wait_settings(env):
    """(spin_us, spin_mode) from the environment Node gives the stub (--backend-config=python,
    spin-us=... / spin-mode=...); bad values fall back to the defaults with a warning."""
    spin_us, spin_mode = 50.0, "adaptive"
    raw = env.get(SPIN_US_ENV)
    if raw:
        try:
            spin_us = float(raw)
            if not 0 <= spin_us <= 1_000_000:
                raise ValueError(raw)
        except ValueError:
            emit("WARNING", f"ignoring {SPIN_US_ENV}={raw!r}: not a number of microseconds", "runtime.py", 0)
            spin_us = 50.0
    mode = env.get(SPIN_MODE_ENV)
    if mode:
        if mode in ("adaptive", "always", "never"):
            spin_mode = mode
        else:
            emit("WARNING", f"ignoring {SPIN_MODE_ENV}={mode!r}: expected adaptive, always or never", "runtime.py", 0)
    return spin_us, spin_mode


def install_shim():
    """Attach the shim classes to pb_utils and route logs; before model.py is imported."""
    c_python_backend_utils.inject_into(pb_utils)
    logging_bridge.install()


def run(model_file, region, growth_byte_size, parent_pid, name, mode, log_verbose, runtime_dir=None):
    install_shim()
    STATE.runtime_dir = runtime_dir
    runtime = Runtime(model_file, name, mode, log_verbose, ready_fd=readiness.ready_fd_setting(os.environ))
    parent = parent_watch.ParentWatch(parent_pid)
    spin_us, spin_mode = wait_settings(os.environ)
    channel = STATE.channel = Channel(
        region,
        growth_byte_size,
        spin_us=spin_us,
        spin_mode=spin_mode,
        wake_fd=wake_fd_setting(os.environ),
        segment_fds=segment_fds_setting(os.environ),
    )
    emit("VERBOSE", f"stub '{name}' (pid {os.getpid()}): {channel.describe()}; {objects.describe()}", "runtime.py", 0)
    # Node's watchdog reads the beat once a second (stub-watchdog.ts): a beat every half second
    # always shows there, and an idle stub wakes for it 2 times a second, not 10. The same
    # thread looks for the parent after each beat.
    channel.start_heartbeat(0.5, on_beat=parent.check)
    try:
        return runtime.serve()
    finally:
        STATE.finalizing = True
        channel.close()
        STATE.channel = None

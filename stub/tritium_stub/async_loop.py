"""The stub's asyncio loop for `async def execute`, running in a daemon thread.

Created on first use, like Triton's. Non-decoupled coroutines are awaited from the main
thread; decoupled ones run in the background and their exceptions are only logged.

Decoupled coroutines of one instance run at the same time, at most `limit` of them
(`--backend-config=python,max-async-executes`, sent in `init`; docs/design.md, "Async
execute"). At the limit the main thread waits for one to finish before it schedules the next,
so the batch's `exec_done` waits too and Node keeps further requests in the scheduler's queue,
where queue policies and statistics see them, instead of piling them up in the stub.

Non-decoupled coroutines run one after another by default, as in Triton. With
`concurrent-async-executes` (or the model's CONCURRENT_ASYNC_EXECUTES) above 1, up to that many
run at once: the batch's `exec_done` goes out as soon as its coroutine is scheduled, and each
request is answered through its response sender when the coroutine returns (result.py,
`answer_later`). At the limit the main thread waits, as for decoupled coroutines.

asyncio (with ssl, which it imports) and concurrent.futures are imported on first use, not at
start: together they are about 7 MiB of every stub's memory, and most models never await.
"""

import functools
import os
import threading
from collections.abc import Coroutine

from .logging_bridge import log_exception

# What Node sends when it does not say (the stub's own tests, an older server).
DEFAULT_LIMIT = 128

_loop = None
_background = set()  # keeps pending futures referenced until done
_limit = DEFAULT_LIMIT
_slots = threading.BoundedSemaphore(DEFAULT_LIMIT)
_concurrent_slots = None  # non-decoupled coroutines at once; None: one after another


def configure(limit):
    """Sets how many decoupled coroutines may run at once; before the loop exists (init)."""
    global _limit, _slots
    _limit = max(1, int(limit))
    _slots = threading.BoundedSemaphore(_limit)


def configure_concurrent(limit):
    """Sets how many non-decoupled coroutines may run at once (init); 1 keeps them in turn."""
    global _concurrent_slots
    limit = max(1, int(limit))
    _concurrent_slots = threading.BoundedSemaphore(limit) if limit > 1 else None


def concurrent():
    """Whether non-decoupled coroutines run concurrently (configure_concurrent above 1)."""
    return _concurrent_slots is not None


def run_concurrently(coroutine, on_done):
    """Schedules a non-decoupled coroutine and returns; blocks while the limit of them run.
    `on_done(result, exception)` runs on the loop's thread once it ends."""
    import asyncio

    slots = _concurrent_slots
    future = _schedule(coroutine, slots)

    def done(f):
        _background.discard(f)
        slots.release()
        if f.cancelled():
            on_done(None, asyncio.CancelledError())
            return
        exc = f.exception()
        on_done(None if exc is not None else f.result(), exc)

    future.add_done_callback(done)


def _exception_handler(loop, context):
    exc = context.get("exception")
    if exc is not None:
        log_exception(context.get("message", "") + "\n", exc)
    else:
        from .logger import emit

        emit("ERROR", context.get("message", "asyncio error"), "", 0)


def is_coroutine(value):
    """asyncio.iscoroutine(value), without importing asyncio."""
    return isinstance(value, Coroutine)


def get_loop():
    global _loop
    if _loop is None:
        import asyncio
        import concurrent.futures

        _loop = asyncio.new_event_loop()
        _loop.set_exception_handler(_exception_handler)
        # async_exec waits for its answer in a thread of this executor (Triton's run_in_executor
        # with the default executor), so each running coroutine can have a BLS call waiting:
        # never fewer threads than asyncio's own default. Threads start only when needed.
        workers = max(_limit, min(32, (os.cpu_count() or 1) + 4))
        _loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="tritium-async"))
        asyncio.set_event_loop(_loop)  # Triton makes it the main thread's loop as well
        threading.Thread(target=_loop.run_forever, daemon=True, name="tritium-asyncio").start()
    return _loop


def run(coroutine):
    """Run a coroutine on the loop and wait for its result."""
    import asyncio

    return asyncio.run_coroutine_threadsafe(coroutine, get_loop()).result()


def _background_done(slots, future):
    _background.discard(future)
    slots.release()
    if future.cancelled():
        return
    exc = future.exception()
    if exc is not None:
        log_exception("", exc)


def run_in_background(coroutine):
    """Schedules a decoupled coroutine; blocks while `limit` of them run (see above)."""
    slots = _slots
    _schedule(coroutine, slots).add_done_callback(functools.partial(_background_done, slots))


def _schedule(coroutine, slots):
    """Takes a slot (waiting for one) and puts the coroutine on the loop; the caller's done
    callback gives the slot back."""
    import asyncio

    slots.acquire()
    try:
        future = asyncio.run_coroutine_threadsafe(coroutine, get_loop())
    except BaseException:
        slots.release()
        raise
    _background.add(future)
    return future


def stop():
    if _loop is not None:
        _loop.call_soon_threadsafe(_loop.stop)

"""The stub's asyncio loop for `async def execute`, running in a daemon thread.

Created on first use, like Triton's. Non-decoupled coroutines are awaited from the main
thread; decoupled ones run in the background and their exceptions are only logged.

Decoupled coroutines of one instance run at the same time, at most `limit` of them
(`--backend-config=python,max-async-executes`, sent in `init`; docs/design.md, "Async
execute"). At the limit the main thread waits for one to finish before it schedules the next,
so the batch's `exec_done` waits too and Node keeps further requests in the scheduler's queue,
where queue policies and statistics see them, instead of piling them up in the stub.

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


def configure(limit):
    """Sets how many decoupled coroutines may run at once; before the loop exists (init)."""
    global _limit, _slots
    _limit = max(1, int(limit))
    _slots = threading.BoundedSemaphore(_limit)


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
    import asyncio

    slots = _slots
    slots.acquire()
    try:
        future = asyncio.run_coroutine_threadsafe(coroutine, get_loop())
    except BaseException:
        slots.release()
        raise
    _background.add(future)
    future.add_done_callback(functools.partial(_background_done, slots))


def stop():
    if _loop is not None:
        _loop.call_soon_threadsafe(_loop.stop)

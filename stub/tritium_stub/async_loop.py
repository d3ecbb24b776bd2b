"""The stub's asyncio loop for `async def execute`, running in a daemon thread.

Created on first use, like Triton's. Non-decoupled coroutines are awaited from the main
thread; decoupled ones run in the background and their exceptions are only logged.
"""

import asyncio
import threading

from .logging_bridge import log_exception

_loop = None
_background = set()  # keeps pending futures referenced until done


def _exception_handler(loop, context):
    exc = context.get("exception")
    if exc is not None:
        log_exception(context.get("message", "") + "\n", exc)
    else:
        from .logger import emit

        emit("ERROR", context.get("message", "asyncio error"), "", 0)


def get_loop():
    global _loop
    if _loop is None:
        _loop = asyncio.new_event_loop()
        _loop.set_exception_handler(_exception_handler)
        asyncio.set_event_loop(_loop)  # Triton makes it the main thread's loop as well
        threading.Thread(target=_loop.run_forever, daemon=True, name="tritium-asyncio").start()
    return _loop


def run(coroutine):
    """Run a coroutine on the loop and wait for its result."""
    return asyncio.run_coroutine_threadsafe(coroutine, get_loop()).result()


def _background_done(future):
    _background.discard(future)
    if future.cancelled():
        return
    exc = future.exception()
    if exc is not None:
        log_exception("", exc)


def run_in_background(coroutine):
    future = asyncio.run_coroutine_threadsafe(coroutine, get_loop())
    _background.add(future)
    future.add_done_callback(_background_done)


def stop():
    if _loop is not None:
        _loop.call_soon_threadsafe(_loop.stop)

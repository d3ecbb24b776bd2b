"""Ring A shared between the main loop and threads waiting for Node's answers (docs/ipc.md,
"Calls from the model").

Ring A has one consumer at a time, and the main thread, which normally reads it, may itself be
the one waiting (a BLS `exec()` inside `execute`), or be busy in `execute` while a model thread
waits. So whichever thread needs a message next takes the reader role, reads one message, and
hands it on: answers to calls go to their waiters (`route`), everything else is kept for the
main loop. One condition guards the role, the kept messages and every waiter's state, so a
thread woken by the reader re-checks its own answer before reading again.
"""

import collections
import threading


class Inbox:
    def __init__(self, recv, route):
        """recv(timeout) -> message or None (the channel's); route(msg) -> True when the
        message answered a call (and was delivered under `self.cond`)."""
        self._recv = recv
        self._route = route
        # `with self._lock` is the condition's own lock taken in C; `with self.cond` takes the
        # same lock through two Python-level calls, on every message of every BLS call.
        self._lock = threading.Lock()
        self.cond = threading.Condition(self._lock)
        self._reading = False
        self._sleepers = 0  # threads in cond.wait(): only then is a notify worth its cost
        self._kept = collections.deque()
        kept = self._kept
        # The main loop's ready() for _take, made once rather than per message.
        self._pop_kept = lambda: kept.popleft() if kept else None

    def _read_one(self, timeout):
        """One message, read holding the reader role, which it gives up: answers are routed
        (None is returned), the rest returned."""
        msg = None
        try:
            msg = self._recv(timeout)
        finally:
            # One acquisition both gives up the role and delivers an answer.
            with self._lock:
                self._reading = False
                if msg is not None and self._route(msg):
                    msg = None
                if self._sleepers:
                    self.cond.notify_all()
        return msg

    def _take(self, ready):
        """Under the condition: ready()'s value once it is neither None nor False (a kept message,
        or True from a waiter's done()); else None once this thread holds the reader role (it
        must then read)."""
        with self._lock:
            while True:
                value = ready()
                if value is not None and value is not False:
                    return value
                if not self._reading:
                    self._reading = True
                    return None
                self._sleepers += 1
                try:
                    self.cond.wait()
                finally:
                    self._sleepers -= 1

    def poll(self):
        """Reads what ring A holds now, without waiting, unless another thread is reading (which
        routes the same way): answers and releases are routed at once, the rest kept for the main
        loop. For a thread that must not block, e.g. one about to grow the output arena while
        Node's releases wait unread behind a long execute."""
        while True:
            with self.cond:
                if self._reading:
                    return
                self._reading = True
            msg = None
            try:
                msg = self._recv(0)
            finally:
                with self.cond:
                    self._reading = False
                    if msg is not None and not self._route(msg):
                        self._kept.append(msg)
                    if self._sleepers:
                        self.cond.notify_all()
            if msg is None:
                return

    def next_for_main(self):
        """The main loop's next message (blocks)."""
        pop_kept = self._pop_kept
        while True:
            msg = self._take(pop_kept)
            if msg is None:
                msg = self._read_one(None)
            if msg is not None:
                return msg

    def wait_for(self, done):
        """Blocks until `done()` (checked under `cond`) is true; reads ring A meanwhile when no
        other thread does. Messages for the main loop are kept for it."""
        while not self._take(done):
            msg = self._read_one(None)
            if msg is not None:
                with self._lock:
                    self._kept.append(msg)
                    if self._sleepers:
                        self.cond.notify_all()

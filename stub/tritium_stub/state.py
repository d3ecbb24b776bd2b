"""Process-wide state of one stub.

One stub process serves exactly one model instance, so the shim classes (Logger, senders,
BLS checks) read these module-level fields instead of threading a context object through
user code that Triton's API does not let us change.
"""


class _State:
    __slots__ = (
        "channel",  # ipc.Channel once opened; None before (logs then go to stderr)
        "name",  # instance name (model name for the auto-complete stub)
        "model_file",  # argv path of model.py
        "version_dir",  # directory of model.py; pb_utils.get_model_dir() returns it
        "runtime_dir",  # a Python-based backend's directory (its model.py is module `model`), or None
        "log_verbose",  # --log-verbose level; VERBOSE records are dropped below 1
        "decoupled",  # model_transaction_policy.decoupled of the final config
        "config_outputs",  # frozenset of output names in the config, for sender checks
        "initialized",  # initialize() completed: BLS and model control become legal
        "finalizing",  # fin received: BLS is illegal again
        "inbox",  # inbox.Inbox reading ring A for the main loop and for calls to Node; None before
        "running_reqs",  # the exec's requests as Node sent them (a BLS call made meanwhile belongs to their rids)
    )

    def __init__(self):
        self.channel = None
        self.name = ""
        self.model_file = ""
        self.version_dir = ""
        self.runtime_dir = None
        self.log_verbose = 0
        self.decoupled = False
        self.config_outputs = frozenset()
        self.initialized = False
        self.finalizing = False
        self.inbox = None
        self.running_reqs = ()


STATE = _State()

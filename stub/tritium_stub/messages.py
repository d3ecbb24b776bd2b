"""The messages of docs/ipc.md ("Messages"): their kinds and fields.

GENERATED from src/backends/python/ipc/messages.json by scripts/gen-ipc-messages.mjs: edit that
file and run `npm run gen:ipc`. Node gets its view of the same declaration as TypeScript types
(src/backends/python/ipc/messages.ts). The stub sends and dispatches on these names, and
test/ipc-contract.test.ts checks every message literal of the stub against FIELDS.
"""

# Node → stub (ring A)
INIT = "init"
AUTOCOMPLETE = "autocomplete"
EXEC = "exec"
RELEASE = "release"
LOGLEVEL = "loglevel"
BLS_R = "bls_r"
MODEL_CTL_R = "model_ctl_r"
METRIC_R = "metric_r"
FIN = "fin"

# stub → Node (ring B)
HELLO = "hello"
INIT_OK = "init_ok"
INIT_ERR = "init_err"
AUTOCOMPLETE_OK = "autocomplete_ok"
AUTOCOMPLETE_ERR = "autocomplete_err"
EXEC_DONE = "exec_done"
SEND = "send"
LOG = "log"
SEG = "seg"
FIN_DONE = "fin_done"
READY_DONE = "ready_done"
BLS = "bls"
BLS_FREE = "bls_free"
BLS_CANCEL = "bls_cancel"
MODEL_CTL = "model_ctl"
METRIC = "metric"

# What each direction carries.
NODE_TO_STUB = frozenset({INIT, AUTOCOMPLETE, EXEC, RELEASE, LOGLEVEL, BLS_R, MODEL_CTL_R, METRIC_R, FIN})
STUB_TO_NODE = frozenset(
    {
        HELLO,
        INIT_OK,
        INIT_ERR,
        AUTOCOMPLETE_OK,
        AUTOCOMPLETE_ERR,
        EXEC_DONE,
        SEND,
        LOG,
        SEG,
        FIN_DONE,
        READY_DONE,
        BLS,
        BLS_FREE,
        BLS_CANCEL,
        MODEL_CTL,
        METRIC,
    }
)

# kind -> (fields every message of it has, fields it may have); `t` is not listed. For a kind
# with variants (metric, by `op`), what every variant has and what some have.
FIELDS = {
    INIT: (("args",), ("async_limit", "concurrent_executes")),
    AUTOCOMPLETE: (("config",), ()),
    EXEC: (("id", "reqs"), ("rel",)),
    RELEASE: (("blocks",), ()),
    LOGLEVEL: (("verbose",), ()),
    BLS_R: (("bid", "resp", "final"), ()),
    MODEL_CTL_R: (("cid",), ("ready", "err")),
    METRIC_R: (("cid",), ("value", "err")),
    FIN: ((), ()),
    HELLO: (("pid",), ()),
    INIT_OK: ((), ("ready_fn",)),
    INIT_ERR: (("msg",), ()),
    AUTOCOMPLETE_OK: (("config",), ()),
    AUTOCOMPLETE_ERR: (("msg",), ()),
    EXEC_DONE: (("id",), ("err", "resched", "resps", "ns")),
    SEND: (("rid", "flags", "resp"), ()),
    LOG: (("level", "msg"), ("file", "line")),
    SEG: (("name", "size"), ()),
    FIN_DONE: ((), ()),
    READY_DONE: (("seq", "ready"), ("err",)),
    BLS: (
        ("bid", "model", "ver", "id", "corr", "flags", "timeout", "params", "outs", "inputs", "dec", "rids"),
        ("tr",),
    ),
    BLS_FREE: (("blocks",), ()),
    BLS_CANCEL: (("bid",), ()),
    MODEL_CTL: (("cid", "op", "model"), ("ver", "config", "files", "dependents")),
    METRIC: (("op", "name"), ("cid", "description", "kind", "labels", "buckets", "v")),
}

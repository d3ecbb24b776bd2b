"""Checks the stub's messages against their declaration (src/backends/python/ipc/messages.json,
through the generated tritium_stub/messages.py); run by test/ipc-contract.test.ts.

Every dict literal of the stub with a "t" key is a message the stub sends. Its kind must be a
stub-to-Node kind named through messages.py (not a string), and the keys it gets — in the
literal, and by `name["key"] = ...` on the variable it was assigned to, in the same function —
must be declared for that kind; the required ones must all be there unless the literal spreads
`**fields` (checked where those are built). The instance runtime's dispatch must compare
against exactly the Node-to-stub kinds. Prints a JSON list of problems (empty: all agree).
"""

import ast
import json
import os
import sys

STUB = os.path.join(os.path.dirname(__file__), "..", "..", "stub")
sys.path.insert(0, STUB)

from tritium_stub import messages  # noqa: E402

PACKAGE = os.path.join(STUB, "tritium_stub")
KINDS = {
    name: getattr(messages, name)
    for name in dir(messages)
    if name.isupper() and isinstance(getattr(messages, name), str)
}


SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def own_nodes(scope):
    """The nodes of one function (or the module), not those of the functions nested in it."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, SCOPES):
            todo.extend(ast.iter_child_nodes(node))


def check_file(path, problems):
    tree = ast.parse(open(path).read(), path)
    where = os.path.relpath(path, STUB)
    for func in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module))]:
        nodes = list(own_nodes(func))
        # The keys later set on each variable a message literal was assigned to.
        later = {}
        for node in nodes:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.targets[0], ast.Subscript)
                and isinstance(node.targets[0].value, ast.Name)
                and isinstance(node.targets[0].slice, ast.Constant)
            ):
                later.setdefault(node.targets[0].value.id, set()).add(node.targets[0].slice.value)
        for node in nodes:
            if not isinstance(node, ast.Dict):
                continue
            keys = [k.value if isinstance(k, ast.Constant) else None for k in node.keys]
            if "t" not in keys:
                continue
            kind_node = node.values[keys.index("t")]
            line = f"{where}:{node.lineno}"
            if not (isinstance(kind_node, ast.Name) and kind_node.id in KINDS):
                problems.append(f"{line}: the kind is not a name from messages.py")
                continue
            kind = KINDS[kind_node.id]
            if kind not in messages.STUB_TO_NODE:
                problems.append(f"{line}: '{kind}' is not a message the stub sends")
                continue
            got = {k for k in keys if k not in (None, "t")}
            for parent in nodes:
                if isinstance(parent, ast.Assign) and parent.value is node and isinstance(parent.targets[0], ast.Name):
                    got |= later.get(parent.targets[0].id, set())
            required, optional = messages.FIELDS[kind]
            for k in sorted(got - set(required) - set(optional)):
                problems.append(f"{line}: '{kind}' has no field '{k}'")
            if None not in keys:  # no **spread: every required field must be set
                for k in sorted(set(required) - got):
                    problems.append(f"{line}: '{kind}' lacks its field '{k}'")
    return problems


def dispatched(path):
    """The kinds the instance runtime compares `msg["t"]` / `kind` with."""
    tree = ast.parse(open(path).read(), path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.Eq):
            left, right = node.left, node.comparators[0]
            is_kind = (isinstance(left, ast.Name) and left.id == "kind") or (
                isinstance(left, ast.Subscript) and isinstance(left.slice, ast.Constant) and left.slice.value == "t"
            )
            if is_kind and isinstance(right, ast.Name) and right.id in KINDS:
                out.add(KINDS[right.id])
    return out


problems = []
for name in sorted(os.listdir(PACKAGE)):
    if name.endswith(".py") and name != "messages.py":
        check_file(os.path.join(PACKAGE, name), problems)
handled = dispatched(os.path.join(PACKAGE, "runtime.py"))
if handled != set(messages.NODE_TO_STUB):
    problems.append(f"runtime.py dispatches {sorted(handled)}, Node sends {sorted(messages.NODE_TO_STUB)}")
print(json.dumps(problems))

#!/usr/bin/env python3
"""The stub's own CPU per exec, without Node, the client or sleeps: the real stub process
(stub/main.py) serves add_sub or identity_fp32 of bench/models/vs-triton while this process
plays Node's side of the rings (test/python/node_emulator.py, the same C++ rings) and keeps
`--depth` execs in the stub's ring. This side polls ring B instead of sleeping, so the stub
never has to wake it and its ring A never runs dry: what is counted (utime + stime of the
stub from /proc) is the stub's per-request work itself, which bench/vs-triton's stub figures
contain under a client's burstier load along with sleeps and wake-ups.

    .venv/bin/python bench/stub-exec.py [--before <checkout>] [--rounds 5] [--execs 40000]
        [--depth 4] [--model add_sub|identity_fp32]

With --before, rounds alternate between the stub of that checkout (stub/, and its native
extension built) and this one's; medians per build, and the median of the per-round ratios
(each round runs both builds back to back, so it is the figure that resists the machine's drift).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid

import msgpack
import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "stub"))
sys.path.insert(0, os.path.join(ROOT, "test", "python"))

from node_emulator import NATIVE, NodeEmulator  # noqa: E402

REPO = os.path.join(ROOT, "bench", "models", "vs-triton")
HZ = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def one_run(checkout, model, execs, depth):
    """Stub CPU µs per exec of the stub in `checkout`, and execs per second."""
    em = NodeEmulator(f"tritium_{os.getpid()}_{uuid.uuid4().hex[:8]}_bench")
    proc = subprocess.Popen(
        [
            sys.executable,
            os.path.join(checkout, "stub", "main.py"),
            os.path.join(REPO, model, "1", "model.py"),
            em.region,
            str(1 << 20),
            str(os.getpid()),
            f"{model}_0_0",
            "instance",
            "0",
        ],
        cwd=checkout,
    )
    try:
        em.seen = []
        em.pop()  # hello
        outs = ["OUTPUT0", "OUTPUT1"] if model == "add_sub" else ["OUTPUT0"]
        n = 4 if model == "add_sub" else 1
        config = {
            "name": model,
            "max_batch_size": 0,
            "output": [{"name": o, "data_type": "TYPE_FP32", "dims": [n]} for o in outs],
        }
        args = {
            "model_config": json.dumps(config),
            "model_instance_kind": "CPU",
            "model_instance_name": f"{model}_0_0",
            "model_instance_device_id": "0",
            "model_repository": os.path.join(REPO, model),
            "model_version": "1",
            "model_name": model,
        }
        em.push({"t": "init", "args": args})
        em.pop_until("init_ok")
        inputs = [em.put_input("INPUT0", "FP32", [n], np.arange(n, dtype=np.float32).tobytes())]
        if model == "add_sub":
            inputs.append(em.put_input("INPUT1", "FP32", [n], np.ones(n, np.float32).tobytes()))
        # Node's end of the rings polling instead of sleeping (see the module's docstring).
        em.link.close()
        fd = os.open(f"/dev/shm/{em.region}.n0", os.O_RDWR)
        try:
            em.link = NATIVE.Link(fd, spin_mode="always", spin_us=1_000_000.0, side="node")
        finally:
            os.close(fd)
        send, recv = em.link.send, em.link.recv

        def execs_through(count):
            sent = done = 0
            while done < count:
                while sent - done < depth and sent < count:
                    req = {
                        "rid": sent,
                        "id": "",
                        "corr": 0,
                        "flags": 0,
                        "timeout": 0,
                        "params": None,
                        "outs": outs,
                        "inputs": inputs,
                        "cflag": None,
                    }
                    send(msgpack.packb({"t": "exec", "id": sent, "reqs": [req]}, use_bin_type=True))
                    sent += 1
                data = recv(10.0)
                if data is None:
                    raise TimeoutError("the stub stopped answering")
                msg = msgpack.unpackb(data, raw=False)
                if msg["t"] == "exec_done":
                    if "err" in msg:
                        raise RuntimeError(msg["err"])
                    done += 1

        execs_through(max(2000, execs // 10))  # warm-up
        t0, c0 = time.monotonic(), cpu_ticks(proc.pid)
        execs_through(execs)
        t1, c1 = time.monotonic(), cpu_ticks(proc.pid)
        return (c1 - c0) / HZ * 1e6 / execs, execs / (t1 - t0)
    finally:
        proc.kill()
        proc.wait()
        em.close()


def git_commit(checkout):
    r = subprocess.run(["git", "-C", checkout, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", help="another checkout whose stub runs in alternate rounds")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--execs", type=int, default=40000)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--model", default="add_sub", choices=["add_sub", "identity_fp32"])
    a = ap.parse_args()
    if NATIVE is None:
        raise SystemExit("bench/stub-exec.py needs the stub's native extension (npm run build:native)")
    builds = [("after", ROOT)] + ([("before", os.path.abspath(a.before))] if a.before else [])
    figures = {name: [] for name, _ in builds}
    started = time.time()
    load0 = os.getloadavg()
    for r in range(a.rounds):
        for name, checkout in builds if r % 2 == 0 else list(reversed(builds)):
            us, rate = one_run(checkout, a.model, a.execs, a.depth)
            figures[name].append((us, rate))
            print(f"round {r + 1}/{a.rounds} {name}: {us:.2f} µs per exec, {rate:.0f} execs/s", flush=True)
    print("```")
    print(
        f"command: {sys.executable} bench/stub-exec.py"
        + (f" --before {a.before}" if a.before else "")
        + f" --rounds {a.rounds} --execs {a.execs} --depth {a.depth} --model {a.model}"
    )
    print(f"date: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(started))}, {time.time() - started:.0f} s")
    print(f"load average: {load0[0]:.2f} at start, {os.getloadavg()[0]:.2f} at end; Python {sys.version.split()[0]}")
    for name, checkout in builds:
        print(f"{name}: {checkout} ({git_commit(checkout)})")
    print("```")
    print()
    print("| build | stub CPU µs per exec (median) | rounds | execs/s (median) |")
    print("|---|---:|---|---:|")
    for name, _ in builds:
        us = [f[0] for f in figures[name]]
        rates = [f[1] for f in figures[name]]
        print(
            f"| {name} | {statistics.median(us):.2f} | {', '.join(f'{u:.2f}' for u in us)} | {statistics.median(rates):.0f} |"
        )
    if a.before:
        # The machine's speed drifts between rounds; the two builds of one round ran back to back.
        ratios = [x[0] / y[0] for x, y in zip(figures["after"], figures["before"])]
        print()
        print(
            f"after / before per round: {', '.join(f'{r:.2f}' for r in ratios)}; median {statistics.median(ratios):.2f}"
        )


if __name__ == "__main__":
    main()

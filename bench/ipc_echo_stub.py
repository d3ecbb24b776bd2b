"""Echo peer for bench/ipc-roundtrip.ts and test/ipc.test.ts.

Usage: ipc_echo_stub.py <region> <growth_byte_size> [spin_us] [spin_yield 0|1] [spin_mode]
       ipc_echo_stub.py --pipe            (line echo on stdin/stdout, the pipe baseline)

Node's wake eventfd comes as the inherited descriptor named by TRITIUM_STUB_WAKE_FD, and with
memfd segments n0 and the segment socket as those named by TRITIUM_STUB_SEGMENT_FDS, as for a
real stub. Answers {t:"exec", id} with {t:"exec_done", id, resps:[]}, {t:"fin"} with fin_done (then exits),
and a few test-only commands ("echo", "burst", "write", "read", "alloc", "free", "heartbeat").
"""

import errno
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "stub"))


def pipe_echo() -> None:
    rd, wr = sys.stdin.buffer, sys.stdout.buffer
    for line in iter(rd.readline, b""):
        wr.write(line)
        wr.flush()


def main() -> None:
    from tritium_stub import memfd
    from tritium_stub.ipc import Channel
    from tritium_stub.memfd import segment_fds_setting

    if os.environ.get("ECHO_STUB_REFUSE_MEMFD"):  # tests: a host whose seccomp filter refuses memfd_create

        def refused(name):
            raise OSError(errno.EPERM, "memfd_create refused")

        memfd.create = refused

    region, growth = sys.argv[1], int(sys.argv[2])
    spin_us = float(sys.argv[3]) if len(sys.argv) > 3 else 50.0
    spin_yield = len(sys.argv) > 4 and sys.argv[4] not in ("0", "")
    spin_mode = sys.argv[5] if len(sys.argv) > 5 else "adaptive"
    wake_fd = int(os.environ["TRITIUM_STUB_WAKE_FD"])
    ch = Channel(
        region,
        growth,
        spin_us=spin_us,
        spin_yield=spin_yield,
        spin_mode=spin_mode,
        wake_fd=wake_fd,
        segment_fds=segment_fds_setting(os.environ),
    )
    parent = os.getppid()
    while True:
        m = ch.recv(timeout=1.0)
        if m is None:
            if os.getppid() != parent:  # the Node side died without sending fin
                return
            continue
        t = m.get("t")
        if t == "exec":
            done = {"t": "exec_done", "id": m["id"], "resps": []}
            if m.get("rel"):  # output releases piggy-backed on the exec (docs/ipc.md)
                for seg, off in m["rel"]:
                    ch.free(seg, off)
                done["freed"] = len(m["rel"])
            ch.send(done)
        elif t == "path":
            ch.send({"t": "path_ok", "native": ch.is_native})
        elif t == "fin":
            ch.send({"t": "fin_done"})
            ch.close()
            return
        elif t == "echo":
            ch.send(m)
        elif t == "burst":  # many messages of varied size, to wrap ring B and fill it
            for i in range(m["n"]):
                ch.send({"t": "b", "i": i, "pad": b"x" * ((i * 37) % m["max"])})
        elif t == "read":  # Node wrote tensor bytes into an input block: return a checksum + head
            v = ch.tensor_view(m["seg"], m["off"], m["n"])
            ch.send({"t": "read_ok", "sum": sum(v) & 0xFFFFFFFF, "head": bytes(v[:16])})
        elif t == "write":  # fill an output block with a byte pattern
            seg, off, v = ch.alloc(m["n"])
            for i in range(0, m["n"], 4096):
                chunk = bytes(((i + j) * 7) & 0xFF for j in range(min(4096, m["n"] - i)))
                v[i : i + len(chunk)] = chunk
            ch.send({"t": "write_ok", "seg": seg, "off": off, "n": m["n"]})
        elif t == "release":
            for seg, off in m["blocks"]:
                ch.free(seg, off)
            ch.send({"t": "released", "n": len(m["blocks"])})
        elif t == "heartbeat":
            ch.start_heartbeat(m.get("period", 0.05))
            ch.send({"t": "heartbeat_ok"})
        elif t == "sleep":  # stop consuming ring A for a while (back-pressure test)
            import time

            time.sleep(m["s"])
            ch.send({"t": "slept"})


if __name__ == "__main__":
    if sys.argv[1:2] == ["--pipe"]:
        pipe_echo()
    else:
        main()

"""tritium's Python stub: runs one Triton Python-backend model instance.

Node starts one stub process per model instance (see stub/main.py); the modules here hold the
main loop, the pb_utils shim classes and the tensor codec. ipc.py (the shared-memory channel)
is owned by the IPC side of the project.
"""

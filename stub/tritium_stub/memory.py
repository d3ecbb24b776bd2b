"""PreferredMemory and the memory-type enum used by BLS requests."""

import enum


class MemoryType(enum.IntEnum):
    # pybind enum values of Triton's shim (not the C API's TRITONSERVER_MemoryType numbering)
    TRITONSERVER_MEMORY_GPU = 0
    TRITONSERVER_MEMORY_CPU = 1
    DEFAULT = 2


TRITONSERVER_MEMORY_GPU = MemoryType.TRITONSERVER_MEMORY_GPU
TRITONSERVER_MEMORY_CPU = MemoryType.TRITONSERVER_MEMORY_CPU


class PreferredMemory:
    """Where a BLS call would like its outputs; tritium is CPU-only, so it is advisory."""

    __slots__ = ("preferred_memory_type", "preferred_device_id")

    def __init__(self, preferred_memory_type, preferred_device_id=0):
        if not isinstance(preferred_memory_type, MemoryType):
            raise TypeError(
                "PreferredMemory(): preferred_memory_type must be TRITONSERVER_MEMORY_GPU or TRITONSERVER_MEMORY_CPU"
            )
        if type(preferred_device_id) is not int:
            raise TypeError("PreferredMemory(): preferred_device_id must be int")
        self.preferred_memory_type = preferred_memory_type
        self.preferred_device_id = preferred_device_id


DEFAULT_PREFERRED_MEMORY = PreferredMemory(MemoryType.DEFAULT, 0)

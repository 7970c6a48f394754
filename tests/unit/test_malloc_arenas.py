"""shared.malloc_arenas: a role process's threads share at most the arenas it allows.

Each case runs in a fresh interpreter, since the limit binds only arenas created after it:
eight threads then compress in C at once (zlib lets go of the GIL and allocates), which
makes glibc give threads arenas of their own, and ``malloc_info`` counts the heaps.
"""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc", reason="a glibc knob: other C libraries have none"
)

PROBE = """
import ctypes, ctypes.util, os, sys, tempfile, threading, time, zlib
from shared.malloc_arenas import limit_malloc_arenas

print(limit_malloc_arenas(int(sys.argv[1])))
data = os.urandom(1 << 20)

def compress() -> None:
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        zlib.compress(data, 1)

threads = [threading.Thread(target=compress) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = (ctypes.c_char_p, ctypes.c_char_p)
libc.malloc_info.argtypes = (ctypes.c_int, ctypes.c_void_p)
libc.fclose.argtypes = (ctypes.c_void_p,)
path = tempfile.mktemp()
stream = libc.fopen(path.encode(), b"w")
libc.malloc_info(0, stream)
libc.fclose(stream)
print(open(path).read().count("<heap nr="))
os.remove(path)
"""


def heaps_with(arena_max: int) -> tuple[bool, int]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(arena_max)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    taken, heaps = done.stdout.split()
    return taken == "True", int(heaps)


@pytest.mark.parametrize("arena_max", [1, 2])
def test_threads_allocating_at_once_share_the_arenas_allowed(arena_max: int) -> None:
    assert heaps_with(arena_max) == (True, arena_max)


def test_zero_keeps_glibcs_default_of_an_arena_per_busy_thread() -> None:
    taken, heaps = heaps_with(0)
    assert not taken
    assert heaps > 2  # what the limit is there to prevent

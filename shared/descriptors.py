"""How close this process is to its open-file limit (``ulimit -n``).

Every socket, SQLite file and pipe is a descriptor; at the limit a role can no longer accept
a connection or open a file, and a restart is the only remedy. The health signals ask
:func:`descriptor_shortage` so that a platform restarts such a process instead of sending it
more work.
"""

from __future__ import annotations

import errno
import os
import resource

#: Not ready above this share of the limit: the process still works, but stop sending it
#: more until it has descriptors to spare.
READY_SHARE = 0.8
#: Not live above this share: a restart is the only way back.
LIVE_SHARE = 0.95


def open_descriptors() -> int:
    """How many descriptors the process has open (Linux: ``/proc/self/fd``)."""
    return len(os.listdir("/proc/self/fd")) - 1  # listing the folder opened one more


def descriptor_limit() -> int | None:
    """The soft ``RLIMIT_NOFILE``, or None when unlimited."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def descriptor_shortage(share: float) -> str | None:
    """Why the process is short of descriptors (more than ``share`` of its limit open), or
    None when it has enough or cannot tell (no ``/proc``, no limit)."""
    limit = descriptor_limit()
    if limit is None:
        return None
    try:
        used = open_descriptors()
    except FileNotFoundError:  # not Linux: nothing to read, nothing to say
        return None
    except OSError as error:
        if error.errno in (errno.EMFILE, errno.ENFILE):
            return f"out of file descriptors (limit {limit})"
        raise
    if used > share * limit:
        return f"{used} of {limit} file descriptors open"
    return None

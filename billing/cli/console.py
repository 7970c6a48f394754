"""The Rich consoles the commands print with, for a terminal and for a pipe.

On a terminal, Rich's own: the terminal's width, colours, live redraws. Written to a pipe
or a file, nothing is wrapped: Rich would otherwise break every line at 80 columns, in the
middle of a token (a pasted command, a URL, a batch id). Text is printed as is
(``soft_wrap``) and tables get all the room they want, so their rows come out whole, with
every column. ``COLUMNS``, when set, still sets the width, as it does for Rich.
"""

from __future__ import annotations

import os
import sys

from rich.console import Console

#: Wider than any table of ours: output to a pipe keeps its natural width.
PIPE_WIDTH = 1000


def make_console(*, stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    if _is_terminal(stream):
        return Console(stderr=stderr)
    width = None if os.environ.get("COLUMNS") else PIPE_WIDTH  # None: Rich reads COLUMNS
    return Console(stderr=stderr, soft_wrap=True, width=width)


def _is_terminal(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False

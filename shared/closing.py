"""``with thing:`` for the project's objects that hold resources and have ``close()``."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Closing:
    """A context manager that closes its object on exit; subclasses define :meth:`close`."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

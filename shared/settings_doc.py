"""Write docs/settings.md from :class:`shared.settings.Settings`: one table per tier.

Run ``python -m shared.settings_doc`` after changing a setting; a test fails while the
committed page differs from what this prints.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from shared.settings import TIERS, Settings, Tier

PAGE = Path(__file__).resolve().parent.parent / "docs" / "settings.md"

_INTRO = {
    "connect": "Where storage, the bus and the warehouse are, and who may call: "
    "what a deployment sets.",
    "operate": "Limits, timeouts, priorities and processes of a running deployment.",
    "tune": "Names and performance knobs; the defaults suit a first run.",
}


def tier_of(field: FieldInfo) -> Tier | None:
    extra = field.json_schema_extra
    tier = extra.get("tier") if isinstance(extra, dict) else None
    return next((known for known in TIERS if known == tier), None)


def _type_name(field: FieldInfo) -> str:
    text = str(field.annotation)
    for noise in ("typing.", "pydantic.types.", "pathlib.", "shared.faults.spec.", "<class '"):
        text = text.replace(noise, "")
    text = text.replace("'>", "").replace("Annotated[", "").replace(", NoDecode]", "")
    return text.replace("|", "\\|")


def _default(field: FieldInfo) -> str:
    value: Any = field.default
    if field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
    if value is PydanticUndefined or value is None or value == []:
        return "unset"
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    return str(value)


def render() -> str:
    fields = Settings.model_fields
    lines = [
        "# Settings",
        "",
        "Every setting is an environment variable (or a line of a `.env` file); a first run "
        "needs none. Generated from `shared/settings.py` by `python -m shared.settings_doc`.",
    ]
    for tier in TIERS:
        lines += ["", f"## {tier}", "", _INTRO[tier], ""]
        lines += ["| name | type | default | meaning |", "|---|---|---|---|"]
        for name, field in fields.items():
            if tier_of(field) == tier:
                lines.append(
                    f"| `BILLING_{name.upper()}` | {_type_name(field)} | "
                    f"`{_default(field)}` | {field.description} |"
                )
    return "\n".join(lines) + "\n"


def main() -> None:
    PAGE.write_text(render(), encoding="utf-8")
    print(f"wrote {PAGE}", file=sys.stderr)


if __name__ == "__main__":
    main()

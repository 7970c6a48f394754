"""Write constraints.txt: one version of every distribution the project needs (its
dependencies, every extra's, and theirs), one ``name==version`` a line.
``scripts/bootstrap.sh`` and the Dockerfile install with ``-c constraints.txt``, so an install
gets the versions the project is tested with. Run it with the project's venv (dev and bench
installed) after changing pyproject.toml or upgrading on purpose:

    .venv/bin/python scripts/update-constraints.py

The versions are this environment's, resolved by pip together with the extras it lacks
(the Docker image's ``azure-monitor``): ``azure-monitor-opentelemetry`` pins the
OpenTelemetry packages exactly, so those are left for pip to choose with it, and the set
stays installable whatever extras an install combines.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
#: Versions chosen by pip with the extras that pin them, not taken from this environment.
CHOSEN_WITH_THEIR_EXTRA = ("opentelemetry-", "azure-monitor-", "azure-core-tracing-")
HEADER = "# Written by scripts/update-constraints.py; do not edit.\n"


def project_requirements() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    groups = [project["dependencies"], *project["optional-dependencies"].values()]
    return [text for group in groups for text in group]


def installed_versions(requirements: list[str]) -> dict[str, str]:
    """This environment's version of every distribution the requirements lead to."""
    wanted = [Requirement(text) for text in requirements]
    pins: dict[str, str] = {}
    while wanted:
        requirement = wanted.pop()
        name = canonicalize_name(requirement.name)
        if name in pins:
            continue
        try:
            distribution = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            continue  # an extra not installed here, or a marker this platform does not meet
        pins[name] = distribution.version
        for extra in ("", *requirement.extras):
            for text in distribution.requires or []:
                dependency = Requirement(text)
                if dependency.marker is None or dependency.marker.evaluate({"extra": extra}):
                    wanted.append(dependency)
    return pins


def resolved(requirements: list[str], pins: dict[str, str]) -> dict[str, str]:
    """What pip installs for every requirement at once, held to ``pins`` (a dry run)."""
    with tempfile.TemporaryDirectory() as folder:
        constraints = Path(folder) / "pins.txt"
        constraints.write_text("".join(f"{n}=={v}\n" for n, v in pins.items()), encoding="utf-8")
        report = Path(folder) / "report.json"
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed",
             "--quiet", "--report", str(report), "-c", str(constraints), *requirements],
            check=True,
        )  # fmt: skip
        chosen = json.loads(report.read_text(encoding="utf-8"))["install"]
    return {
        canonicalize_name(item["metadata"]["name"]): item["metadata"]["version"] for item in chosen
    }


def main() -> None:
    requirements = project_requirements()
    pins = {
        name: version
        for name, version in installed_versions(requirements).items()
        if not name.startswith(CHOSEN_WITH_THEIR_EXTRA)
    }
    lines = [f"{name}=={version}" for name, version in sorted(resolved(requirements, pins).items())]
    (ROOT / "constraints.txt").write_text(HEADER + "\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

"""docker-compose.yml is one a user can trust, and CI's override changes only images.

``scripts/compose-e2e.sh`` runs the file for real; these checks say what it must declare
(health checks, healthy dependencies, restart policies, pinned tags, one rating process per
processor container) and that the CI override replaces image names and the Dockerfile's
base image only, so that what CI runs is the file users run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
OVERRIDE = yaml.safe_load((ROOT / "scripts/compose-ci/docker-compose.ci.yml").read_text())
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
ROLES = ("initiator", "processor", "controller")
#: its image has no shell to run a check in: servicebus-ready checks it from outside
CHECKED_FROM_OUTSIDE = {"servicebus": "servicebus-ready"}
#: one-off jobs (a profile), not services
JOBS = {"sample"}


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_every_service_has_a_health_check(name: str) -> None:
    service = SERVICES[name]
    if name in JOBS:
        assert service["profiles"], f"{name} is a job: it must sit behind a profile"
        return
    if name in CHECKED_FROM_OUTSIDE:
        checker = SERVICES[CHECKED_FROM_OUTSIDE[name]]
        assert name in checker["depends_on"]
        assert "--servicebus" in checker["healthcheck"]["test"]
        return
    check = service["healthcheck"]
    assert not check.get("disable"), name
    assert check["test"][0] in ("CMD", "CMD-SHELL"), name


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_dependencies_wait_for_health(name: str) -> None:
    for dependency, condition in SERVICES[name].get("depends_on", {}).items():
        expected = "service_started" if dependency in CHECKED_FROM_OUTSIDE else "service_healthy"
        assert condition == {"condition": expected}, f"{name} -> {dependency}"


def test_the_roles_restart_and_wait_for_what_they_use() -> None:
    for role in ROLES:
        assert SERVICES[role]["restart"] == "unless-stopped", role
        assert {"azurite", "servicebus-ready"} <= set(SERVICES[role]["depends_on"]), role
    assert "postgres" in SERVICES["controller"]["depends_on"]


def test_one_rating_process_per_processor_container() -> None:
    processor = SERVICES["processor"]
    assert processor["command"][-2:] == ["--processes", "1"]
    assert processor["deploy"]["replicas"] >= 2


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_image_tags_are_pinned(name: str) -> None:
    image = SERVICES[name]["image"]
    _, _, tag = image.rpartition(":")
    assert tag not in ("", "latest"), image
    assert "/" not in tag, f"{image} has no tag"
    if name not in (*ROLES, *JOBS, "servicebus-ready"):
        assert any(c.isdigit() for c in tag), image


def test_the_emulator_uses_sql_server_not_the_retired_sql_edge() -> None:
    assert SERVICES["sqlserver"]["image"].startswith("mcr.microsoft.com/mssql/server:")
    assert SERVICES["servicebus"]["environment"]["SQL_SERVER"] == "sqlserver"
    assert not any("sql-edge" in service.get("image", "") for service in SERVICES.values())


def test_the_ci_override_replaces_only_images_and_the_base_image() -> None:
    for name, replaced in OVERRIDE["services"].items():
        assert name in SERVICES, name
        assert set(replaced) <= {"image", "build"}, name
        if "build" in replaced:
            assert replaced["build"] == {
                "args": {"PYTHON_IMAGE": replaced["build"]["args"]["PYTHON_IMAGE"]}
            }
            assert "PYTHON_IMAGE" in (ROOT / "Dockerfile").read_text()
        if "image" in replaced:
            assert not replaced["image"].startswith("mcr.microsoft.com"), (
                "a stand-in is no Microsoft image"
            )
            assert replaced["image"].startswith("billing-standin/"), replaced["image"]

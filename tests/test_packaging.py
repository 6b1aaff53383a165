"""The package list in pyproject.toml names every package of the tree, under the name it installs as."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def installed_packages_on_disk() -> set[str]:
    found = {"miroctl.bundled_config"}
    for top, name in (("miroctl", "miroctl"), ("servers", "miroctl.servers")):
        for init in (ROOT / top).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / top).parts
            found.add(".".join((name, *parts)))
    return found


def test_pyproject_lists_every_package_of_the_tree_and_nothing_else():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]

    assert sorted(setuptools["packages"]) == sorted(installed_packages_on_disk())
    assert setuptools["package-dir"] == {"miroctl.servers": "servers", "miroctl.bundled_config": "config"}

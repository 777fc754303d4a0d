"""Tests that need something pip does not install (a browser, the examples' frameworks) skip without it
on a developer's machine. In CI ``.ci/run`` and ``make test`` install all of it, so there its absence
fails the test: a skip would pass without testing anything."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def not_installed(what: str, install: str) -> NoReturn:
    """Skip for want of ``what`` (``install`` says how to get it); fail instead under CI."""
    if os.environ.get("CI"):
        pytest.fail(f"{what} is not installed; CI must install it ({install})")
    pytest.skip(f"{what} is not installed ({install})")

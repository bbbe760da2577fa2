"""Paths the tests share: the source tree and the built CLI (set by CTest)."""

import os
import pathlib

import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("ATTNRT_SOURCE_DIR", pathlib.Path(__file__).parents[2]))
EXAMPLES = sorted((SOURCE_DIR / "examples").glob("*.json"))
HF_FIXTURES = sorted((SOURCE_DIR / "tests" / "data" / "hf").glob("*.json"))


@pytest.fixture
def cli() -> str:
    path = os.environ.get("ATTNRT_CLI")
    if not path:
        pytest.skip("ATTNRT_CLI is not set (CTest sets it)")
    return path

"""The skip policy (skip_policy.py) on a throwaway test file, in a pytest of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

SAMPLE = """
import pytest

def test_runs():
    assert True

def test_cannot():
    pytest.skip("needs a unicorn")

@pytest.mark.skipif(True, reason="no chromium")
def test_marked():
    pass
"""


def _pytest(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    environ = {k: v for k, v in os.environ.items() if k not in ("CI", "ALCC_SKIP_LOG")}
    environ.update(env, PYTHONPATH=str(HERE))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "skip_policy", "-p", "no:cacheprovider"]
    return subprocess.run(
        [*command, str(tmp_path / "test_sample.py")],
        capture_output=True,
        text=True,
        env=environ,
        cwd=tmp_path,
        check=False,
    )


def test_skips_are_logged_with_their_reasons(tmp_path):
    log = tmp_path / "skipped.log"
    done = _pytest(tmp_path, ALCC_SKIP_LOG=str(log))
    assert done.returncode == 0, done.stdout
    assert "1 passed, 2 skipped" in done.stdout
    assert log.read_text().splitlines() == [
        "pytest::test_sample.py::test_cannot\tneeds a unicorn",
        "pytest::test_sample.py::test_marked\tno chromium",
    ]


def test_in_ci_a_skip_is_a_failure(tmp_path):
    done = _pytest(tmp_path, CI="true")
    assert done.returncode == 1, done.stdout
    # A skip in the test's body fails it; a skipif mark (a skip in its setup) is an error.
    assert "1 failed, 1 passed, 1 error" in done.stdout, done.stdout
    assert "test_cannot cannot run here: needs a unicorn" in done.stdout
    assert "test_marked cannot run here: no chromium" in done.stdout
    done = _pytest(tmp_path, CI="false")
    assert done.returncode == 0, done.stdout

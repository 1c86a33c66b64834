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


MODULE_SKIP = """
import pytest

unicorn = pytest.importorskip("alcc_no_such_module", reason="no unicorn module")

def test_never():
    pass
"""


def _pytest(tmp_path: Path, *files: str, **env: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    (tmp_path / "test_module_skip.py").write_text(MODULE_SKIP)
    environ = {k: v for k, v in os.environ.items() if k not in ("CI", "ALCC_SKIP_LOG")}
    environ.update(env, PYTHONPATH=str(HERE))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "skip_policy", "-p", "no:cacheprovider"]
    return subprocess.run(
        [*command, *(str(tmp_path / f) for f in files)],
        capture_output=True,
        text=True,
        env=environ,
        cwd=tmp_path,
        check=False,
    )


def test_skips_are_logged_with_their_reasons(tmp_path):
    log = tmp_path / "skipped.log"
    done = _pytest(tmp_path, "test_sample.py", "test_module_skip.py", ALCC_SKIP_LOG=str(log))
    assert done.returncode == 0, done.stdout
    assert "1 passed, 3 skipped" in done.stdout
    assert sorted(log.read_text().splitlines()) == [
        "pytest::test_module_skip.py\tno unicorn module",
        "pytest::test_sample.py::test_cannot\tneeds a unicorn",
        "pytest::test_sample.py::test_marked\tno chromium",
    ]


def test_in_ci_a_skip_is_a_failure(tmp_path):
    done = _pytest(tmp_path, "test_sample.py", CI="true")
    assert done.returncode == 1, done.stdout
    # A skip in the test's body fails it; a skipif mark (a skip in its setup) is an error.
    assert "1 failed, 1 passed, 1 error" in done.stdout, done.stdout
    assert "test_cannot cannot run here: needs a unicorn" in done.stdout
    assert "test_marked cannot run here: no chromium" in done.stdout
    done = _pytest(tmp_path, "test_sample.py", CI="false")
    assert done.returncode == 0, done.stdout


def test_in_ci_a_module_that_skips_at_import_is_an_error(tmp_path):
    # pytest.importorskip at module level skips while collecting, before any test's report.
    done = _pytest(tmp_path, "test_module_skip.py", CI="true")
    assert done.returncode != 0, done.stdout
    assert "test_module_skip.py cannot run here: no unicorn module" in done.stdout, done.stdout

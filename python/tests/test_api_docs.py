"""The `alcc` package's API reference is generated from its docstrings (pdoc, `make python-docs`):
every public name has a page section, and every public class, function and method a docstring."""

from __future__ import annotations

import inspect

import pytest

alcc = pytest.importorskip("alcc", reason="the alcc package is not installed (make build installs it)")
pdoc = pytest.importorskip("pdoc", reason="pdoc is not installed (scripts/setup.sh installs python[dev])")


def public_members(obj):
    for name, member in inspect.getmembers(obj):
        if not name.startswith("_") and (inspect.isroutine(member) or inspect.isdatadescriptor(member)):
            yield name, member


def test_every_public_name_has_a_docstring():
    missing = []
    for name in alcc.__all__:
        item = getattr(alcc, name)
        if not (inspect.isclass(item) or inspect.isroutine(item)):
            continue
        if not (inspect.getdoc(item) or "").strip():
            missing.append(name)
        if inspect.isclass(item) and not issubclass(item, BaseException):
            for member, value in public_members(item):
                if not (inspect.getdoc(value) or "").strip():
                    missing.append(f"{name}.{member}")
    assert not missing, f"public items without a docstring: {missing}"


def test_the_reference_renders_every_public_name(tmp_path):
    pdoc.pdoc("alcc", output_directory=tmp_path)
    page = (tmp_path / "alcc.html").read_text()
    absent = [name for name in alcc.__all__ if f'id="{name}"' not in page]
    assert not absent, f"names missing from the generated reference: {absent}"
    assert "on_ack" in page and "Decision" in page

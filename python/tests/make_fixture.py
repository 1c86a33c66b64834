"""Builds experiment output directories (the layout of ``docs/experiment-format.md``) from real
``alcc`` runs, for the report's tests.

``simulated``: every run is ``alcc sim`` on a synthetic cellular trace from ``alcc trace gen``
(virtual time, a fraction of a second per run). The simulator stands in for every family:
``tcp-cubic`` is ``--cc cubic``; ``alcc-X@cubic`` and ``udp-X`` are both ``--cc X`` with
different seeds (and a little random loss, so that the seeds matter). The simulator writes no
link log and has no kernel, so these runs have ``series.csv``, ``summary.json`` and
``rusage.json`` (the CPU time of the ``alcc sim`` process) but no ``delays.csv`` and no
``telemetry.jsonl``. A scheme listed in ``failing`` runs on a trace path that does not exist,
so that ``alcc`` really fails and its error becomes the run's ``error``.

Runs over the real emulator, with every file, come from the harness itself (``alcc experiment
run``, see ``test_emulated.py``).

Run as a script: ``python tests/make_fixture.py OUT``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from alcc_report.load import METRIC_COLUMNS, RESULT_COLUMNS

#: The header of results.csv (the contract with the harness, kept in alcc_report.load).
HEADER = RESULT_COLUMNS

#: The metrics a fixture run fills from `alcc sim` (the simulator measures no CPU time).
METRICS = [m for m in METRIC_COLUMNS if m != "cpu_s"]

REPO = Path(__file__).resolve().parents[2]


def alcc_binary() -> Path | None:
    """``target/release/alcc`` of this repository (``ALCC_BIN`` overrides), or ``None``."""
    path = Path(os.environ.get("ALCC_BIN", REPO / "target" / "release" / "alcc"))
    return path if path.is_file() else None


@dataclass(frozen=True)
class Scheme:
    """A scheme as the harness names it."""

    name: str

    @property
    def family(self) -> str:
        """tcp, alcc, udp or ref."""
        return self.name.split("-", 1)[0]

    @property
    def cc(self) -> str:
        """The controller (``none`` for plain TCP)."""
        if self.family == "tcp":
            return "none"
        return self.name.split("-", 1)[1].split("@", 1)[0]

    @property
    def underlay(self) -> str:
        """The kernel CC (empty for udp and ref)."""
        if self.family == "tcp":
            return self.name.split("-", 1)[1]
        if self.family in ("udp", "ref"):
            return ""
        rest = self.name.split("@", 1)
        return rest[1] if len(rest) == 2 else "cubic"

    @property
    def mode(self) -> str:
        """kernel or udp."""
        return "udp" if self.family in ("udp", "ref") else "kernel"


def _timed(command: list[str], **kwargs) -> tuple[subprocess.CompletedProcess, dict]:
    """Runs ``command``; returns its result and the CPU time of the children it used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    user = after.ru_utime - before.ru_utime
    system = after.ru_stime - before.ru_stime
    usage = {"user_s": user, "system_s": system, "cpu_s": user + system, "max_rss_kb": after.ru_maxrss}
    return done, usage


def _row(trace: str, scheme: Scheme, run: int, rel: str) -> dict:
    return {
        "trace": trace,
        "scheme": scheme.name,
        "family": scheme.family,
        "cc": scheme.cc,
        "underlay": scheme.underlay,
        "mode": scheme.mode,
        "run": run,
        "status": "failed",
        "error": "",
        **{m: "" for m in METRICS},
        "cpu_s": "",
        "dir": rel,
    }


def _finish(out: Path, rows: list[dict], name: str, spec: dict) -> None:
    with (out / "results.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=HEADER)
        writer.writeheader()
        writer.writerows(rows)
    doc = {"name": name, "quick": True, "spec": spec, "runs": rows}
    (out / "results.json").write_text(json.dumps(doc, indent=1))
    (out / "spec.toml").write_text(f'name = "{name}"\n# built by python/tests/make_fixture.py\n')


def _fill_metrics(row: dict, summary: dict, cpu_s: float) -> None:
    for m in METRICS:
        value = summary.get(m)
        row[m] = "" if value is None else value
    row["cpu_s"] = cpu_s
    row["status"] = "ok"


def build_simulated(
    out: Path,
    alcc: Path,
    schemes: list[str],
    runs: int = 2,
    duration: int = 20,
    traces: tuple[str, ...] = ("synthetic",),
    failing: tuple[str, ...] = (),
) -> Path:
    """A fixture from ``alcc sim`` runs (see the module doc); returns ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "traces").mkdir(exist_ok=True)
    rows = []
    for t, trace in enumerate(traces):
        trace_path = out / "traces" / f"{trace}.trace"
        gen = [str(alcc), "trace", "gen", "--kind", "cellular", "--seed", str(t + 1)]
        gen += ["--duration", str(duration), "--out", str(trace_path)]
        subprocess.run(gen, check=True, capture_output=True)
        for s, name in enumerate(schemes):
            scheme = Scheme(name)
            for k in range(runs):
                rel = f"runs/{trace}/{name}/run-{k}"
                run_dir = out / rel
                run_dir.mkdir(parents=True, exist_ok=True)
                row = _row(trace, scheme, k, rel)
                cc = "cubic" if scheme.family == "tcp" else scheme.cc
                link = str(trace_path) if name not in failing else str(out / "traces" / "absent.trace")
                command = [str(alcc), "sim", "--trace", link, "--cc", cc, "--delay", "10"]
                command += ["--queue", "bytes=2000000", "--duration", str(duration), "--loss", "0.002"]
                command += ["--seed", str(1 + 100 * s + k), "--series", str(run_dir / "series.csv")]
                (run_dir / "commands.txt").write_text(shlex.join(command) + "\n")
                done, usage = _timed(command)
                (run_dir / "stderr.log").write_text(done.stderr)
                if done.returncode == 0:
                    summary = json.loads(done.stdout)
                    (run_dir / "summary.json").write_text(done.stdout)
                    (run_dir / "rusage.json").write_text(json.dumps(usage))
                    _fill_metrics(row, summary, usage["cpu_s"])
                else:
                    row["error"] = done.stderr.strip() or f"exit status {done.returncode}"
                (run_dir / "result.json").write_text(json.dumps(row))
                rows.append(row)
    _finish(out, rows, "fixture-simulated", {"schemes": schemes, "runs": runs, "duration_s": duration})
    return out


def main() -> int:
    """``make_fixture.py OUT``: a simulated fixture with four schemes, three runs each."""
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    alcc = alcc_binary()
    if alcc is None:
        print(
            "make_fixture: target/release/alcc is missing (cargo build --release -p alcc-cli)",
            file=sys.stderr,
        )
        return 1
    build_simulated(args.out, alcc, ["tcp-cubic", "alcc-copa@cubic", "udp-copa", "alcc-verus@cubic"], runs=3)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

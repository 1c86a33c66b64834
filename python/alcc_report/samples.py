"""The sample populations the figures draw from, per trace and scheme, over all completed runs.

- Throughput: the per-bin throughput of each run's ``series.csv`` (500 ms bins), bins before the
  end of the run only.
- Delay: the per-packet one-way delays of each run's ``delays.csv``; a run without that file
  contributes the per-bin median delays of its ``series.csv`` instead (and the report notes it).

Files are read once and cached; a missing file is noted in :attr:`RunFiles.notes`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from alcc_report.load import (
    Experiment,
    load_delays,
    load_flow_series,
    load_flows,
    load_series,
    load_telemetry,
)


class RunFiles:
    """Cached access to the per-run files of an experiment's completed runs."""

    def __init__(self, experiment: Experiment):
        """Wraps ``experiment``; nothing is read until asked for."""
        self.experiment = experiment
        self._cache: dict[tuple[str, Path], object] = {}
        #: Missing files, one sentence each (shown in the report).
        self.notes: list[str] = []

    def _get(self, kind: str, path: Path, reader):
        key = (kind, path)
        if key not in self._cache:
            value = reader(path)
            if value is None:
                rel = (
                    path.relative_to(self.experiment.root)
                    if path.is_relative_to(self.experiment.root)
                    else path
                )
                self.notes.append(f"{rel} is missing")
            self._cache[key] = value
        return self._cache[key]

    def series(self, row: pd.Series) -> pd.DataFrame | None:
        """The run's ``series.csv``, or ``None``."""
        return self._get("series", self.experiment.run_dir(row) / "series.csv", load_series)

    def delays(self, row: pd.Series) -> np.ndarray | None:
        """The run's per-packet delays (ms) from ``delays.csv``, or ``None``."""
        return self._get("delays", self.experiment.run_dir(row) / "delays.csv", load_delays)

    def telemetry(self, row: pd.Series) -> pd.DataFrame | None:
        """The run's telemetry (t, flow, window, kernel_cwnd), or ``None``."""
        return self._get("telemetry", self.experiment.run_dir(row) / "telemetry.jsonl", load_telemetry)

    def flows(self, row: pd.Series) -> pd.DataFrame | None:
        """The run's per-flow figures (``flows.csv``), or ``None``."""
        return self._get("flows", self.experiment.run_dir(row) / "flows.csv", load_flows)

    def flow_series(self, row: pd.Series) -> pd.DataFrame | None:
        """The run's per-flow 500 ms bins (``flow-series.csv``), or ``None``."""
        return self._get("flow-series", self.experiment.run_dir(row) / "flow-series.csv", load_flow_series)

    def throughput_samples(self, runs: pd.DataFrame) -> np.ndarray:
        """Per-bin throughput (Mbit/s) of every run in ``runs``, concatenated."""
        parts = []
        for _, row in runs.iterrows():
            series = self.series(row)
            if series is not None:
                values = series["throughput_mbps"].to_numpy()
                parts.append(values[~np.isnan(values)])
        return np.concatenate(parts) if parts else np.empty(0)

    def delay_samples(self, runs: pd.DataFrame) -> np.ndarray:
        """Per-packet one-way delays (ms) of every run in ``runs`` (per-bin medians as fallback)."""
        parts = []
        for _, row in runs.iterrows():
            delays = self.delays(row)
            if delays is None:
                series = self.series(row)
                if series is None:
                    continue
                delays = series["delay_p50_ms"].to_numpy()
            parts.append(delays[~np.isnan(delays)])
        return np.concatenate(parts) if parts else np.empty(0)

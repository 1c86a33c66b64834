"""The report's figures, one module per figure of the ALCC paper.

- :mod:`~alcc_report.figures.timeseries`: throughput against capacity and delay over time (Figure 5)
- :mod:`~alcc_report.figures.kde`: kernel density estimates of throughput and delay (Figure 6)
- :mod:`~alcc_report.figures.region`: the operating region, 25th-75th percentile ellipses (Figure 7)
- :mod:`~alcc_report.figures.scatter`: Pantheon-style throughput against p95 delay
- :mod:`~alcc_report.figures.cwnd`: the application window under the kernel cwnd (Figure 1)

Each module has a ``draw(...)`` returning a list of :class:`~alcc_report.figures.common.Figure`.
"""

"""The report's content, independent of its format: sections of text, tables and figures."""

from __future__ import annotations

from dataclasses import dataclass, field

from alcc_report.cpu import cpu_table
from alcc_report.fidelity import FLAG_PERCENT, OWN_LOG, fidelity_table
from alcc_report.figures import cwnd, cwnd_pairs, flows, kde, region, scatter, timeseries
from alcc_report.figures.common import Figure, Palette
from alcc_report.flows import competing_table, fairness_table, per_flow_table
from alcc_report.load import Experiment
from alcc_report.samples import RunFiles
from alcc_report.schemes import COMPARISONS
from alcc_report.tables import Table, cpu_rows, failed_table, fidelity_rows, legend_table, summary_table
from alcc_report.underlay import cwnd_share_table, kernel_fidelity_rows
from alcc_report.uplink import PLAIN_UPLOADS, uplink_table


@dataclass
class Section:
    """One section: a heading, a paragraph, then tables and figures (or why there are none)."""

    key: str
    title: str
    text: str
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    #: Shown instead of tables and figures when there are none.
    empty: str = ""


@dataclass
class Report:
    """The whole report."""

    title: str
    #: One paragraph on where the data came from.
    preamble: str
    sections: list[Section]

    def figures(self) -> list[Figure]:
        """Every figure, in order."""
        return [f for s in self.sections for f in s.figures]


def build_report(experiment: Experiment) -> Report:
    """Computes every table and draws every figure of ``experiment``."""
    runs = experiment.runs
    files = RunFiles(experiment)
    palette = Palette(list(runs["scheme"]))
    ok, failed = experiment.ok_runs(), experiment.failed_runs()
    quick = {True: ", quick", False: "", None: ""}[experiment.quick]
    preamble = (
        f"Experiment `{experiment.name}`{quick}: {len(runs)} runs on {runs['trace'].nunique()} traces "
        f"with {runs['scheme'].nunique()} schemes; {len(ok)} completed, {len(failed)} failed "
        "(failed runs are listed below and left out of every figure and median)."
    )
    sections = [
        Section(
            "summary",
            "Summary",
            "Medians over the completed runs of each scheme, and what each scheme is.",
            [summary_table(runs), legend_table(runs)],
        ),
        Section(
            "failed",
            "Failed runs",
            "Runs that did not complete, with the first line of their error.",
            [failed_table(runs)] if len(failed) else [],
            empty="No run failed.",
        ),
    ]
    uplink = uplink_table(runs)
    if uplink is not None:
        sections.append(
            Section(
                "uplink",
                "Uploads: against plain TCP, and the Java client against the Rust client",
                "The client sent through the uplink trace to `alcc serve --receive`; the emulator "
                "measured the uplink. Medians over completed runs; each scheme's throughput and p95 "
                "one-way delay as ratios to the plain TCP upload on the same trace (the first of "
                f"{', '.join(PLAIN_UPLOADS)} that ran there), and each Java client's to the Rust "
                "client (alcc put) with the same controller and kernel congestion control. The "
                "paper's Figure 4 claim: p95 at most 1/4 of plain TCP's at 85 % of its throughput "
                "or more.",
                [uplink],
            )
        )
    fairness = fairness_table(runs)
    if fairness is not None:
        tables = [t for t in (fairness, per_flow_table(files, runs), competing_table(files, runs)) if t]
        sections.append(
            Section(
                "flows",
                "Several flows and cross traffic (paper Figures 22-24)",
                "Runs with a workload: the scheme's flows measured apart in the emulator's flow log "
                "(docs/experiment-format.md). First the scheme's flows together (their throughput and p95 "
                "one-way delay, cross traffic left out, beside the whole link's throughput) and Jain's "
                "fairness index of their rates while all run (weighted: of rate / weight, 1 when every flow "
                "gets its weight's share); then each flow (share: of the scheme's bytes while all its flows "
                "run); then each cross flow's throughput during its on periods next to each scheme, as a "
                "ratio to what it got next to plain TCP. Medians over completed runs.",
                tables,
                figures=flows.draw(files, palette) if len(ok) else [],
            )
        )
    figure_sections = [
        ("fig5", "Throughput and delay over time (paper Figure 5)", timeseries),
        ("fig6", "Throughput and delay densities (paper Figure 6)", kde),
        ("fig7", "Operating region (paper Figure 7)", region),
        ("pantheon", "Throughput against p95 delay (Pantheon style)", scatter),
    ]
    for key, title, module in figure_sections:
        figures = module.draw(files, palette) if len(ok) else []
        sections.append(
            Section(
                key,
                title,
                module.__doc__.strip().split("\n\n")[0],
                figures=figures,
                empty="No completed run with data.",
            )
        )
    for comparison in COMPARISONS:
        mine, theirs = comparison.subject_short, comparison.reference_short
        if comparison.reference == "ref" and not (runs["family"] == "ref").any():
            # Said plainly: without the authors' programs every comparison is with our own X.
            sections.append(
                Section(
                    comparison.key,
                    comparison.title,
                    comparison.text,
                    [],
                    empty=(
                        "The authors' programs (ref-X schemes) did not run in this experiment: the "
                        "fidelity figures below are against our own UDP X, not against X as its "
                        "authors built it."
                    ),
                )
            )
            continue
        fidelity = fidelity_table(runs, comparison)
        sections.append(
            Section(
                comparison.key,
                comparison.title,
                f"{comparison.text} Median over runs of the per-run throughput and of the per-run "
                f"95th-percentile one-way delay; difference = ({mine} - {theirs}) / {theirs}; differences "
                f"beyond {FLAG_PERCENT:g} % are flagged (the paper reports 3-10 %). Every run is judged "
                f"over the same window (the `window` column: the experiment's duration from the scheme's "
                f"scheduled sender start, however long its emulator ran); `{OWN_LOG}` marks results "
                f"written before that window existed, whose figures are over each run's own link log.",
                [fidelity_rows(fidelity, comparison)] if len(fidelity) else [],
                empty=f"No {comparison.subject} scheme in this experiment.",
            )
        )
    sections.append(
        Section(
            "fig1",
            "Application window and kernel cwnd (paper Figure 1)",
            cwnd.__doc__.strip().split("\n\n")[0],
            figures=cwnd.draw(files, palette) if len(ok) else [],
            empty="No completed ALCC run with telemetry.",
        )
    )
    underlay_tables = [t for t in (cwnd_share_table(files), kernel_fidelity_rows(runs)) if t is not None]
    sections.append(
        Section(
            "underlay",
            "Kernel cwnd under alcc's BPF underlay, and alcc's Reno/CUBIC against the kernel's",
            "Share of telemetry samples in which the kernel cwnd is at or above the controller's "
            "window (the hold policy promises it) and equal to it in whole segments (the follow "
            "policy), per ALCC scheme; then alcc-X over the follow underlay against kernel X (X = "
            "reno, cubic) on the same trace, with their windows side by side.",
            tables=underlay_tables,
            figures=cwnd_pairs.draw(files, palette) if len(ok) else [],
            empty="No ALCC run with telemetry.",
        )
    )
    cpu = cpu_table(runs)
    sections.append(
        Section(
            "cpu",
            "CPU time relative to plain TCP (paper Section 5.6)",
            "Median sender CPU time (user + system) per run and its ratio to the plain-TCP baseline "
            "on the same trace (tcp-U for a scheme over kernel underlay U, else tcp-cubic). Plain TCP "
            "is a sendfile writer with no alcc code on the data path.",
            [cpu_rows(cpu)] if len(cpu) else [],
            empty="No completed run.",
        )
    )
    notes = sorted(set(experiment.notes + files.notes))
    if notes:
        sections.append(
            Section(
                "notes",
                "Notes",
                "Files the report expected and did not find (the figures use what there is):",
                [Table("notes", ["note"], [[n] for n in notes])],
            )
        )
    return Report(f"alcc experiment report: {experiment.name}", preamble, sections)

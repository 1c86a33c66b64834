"""Tables of bench/coupled-results.md from output directories of the `equal` and `weighted`
workloads of experiments/coupled.toml: python3 bench/coupled_table.py OUT... (pandas; the report's
venv has it). Several directories (one per trace, each one hold of the emulator lock) are read
together; ratios are taken within a trace, whose schemes ran interleaved in one hold.

Per run (results.json): the scheme's 4 flows' summed throughput (`flows_throughput_mbps`), their
p95 one-way delay (`flows_delay_p95_ms`), and each flow's share of the 4 flows' bytes. Per trace,
workload and scheme: the mean over runs and the runs' p95s; the coupled/uncoupled ratios of
aggregate and p95 (uncoupled p95 over coupled p95: above 1 is lower delay coupled); and with
weights the largest relative error of a flow's share against its weight's share in any run.
"""

import json
import sys
from pathlib import Path

import pandas as pd

rows = []
for out in map(Path, sys.argv[1:]):
    doc = json.loads((out / "results.json").read_text())
    for r in doc["runs"]:
        if r["status"] != "ok":
            key = dict(trace=r["trace"], workload=r["workload"], scheme=r["scheme"], run=r["run"])
            rows.append(dict(key, ok=False))
            continue
        flows = sorted((f for f in r["per_flow"] if f["flow"].startswith("flow-")), key=lambda f: f["flow"])
        total = sum(f["bytes"] for f in flows)
        shares = [f["bytes"] / total for f in flows]
        weights = [f["weight"] for f in flows]
        err = None
        if all(w is not None for w in weights):
            want = [w / sum(weights) for w in weights]
            err = max(abs(s - w) / w for s, w in zip(shares, want, strict=True))
        rows.append(
            dict(
                trace=r["trace"],
                workload=r["workload"],
                scheme=r["scheme"],
                run=r["run"],
                ok=True,
                agg=r["flows_throughput_mbps"],
                p95=r["flows_delay_p95_ms"],
                p50=r["delay_p50_ms"],
                shares=shares,
                err=err,
                load=r["load_avg"],
            )
        )
df = pd.DataFrame(rows)
load = f"{df['load'].min():.1f}-{df['load'].max():.1f}"
print(f"runs ok: {int(df['ok'].sum())} of {len(df)}; load_avg at run ends: {load}")
ok = df[df["ok"]]
print()
print(
    "| trace | workload | scheme | runs | aggregate Mbit/s | p95 ms (mean) | p95 ms per run"
    " | shares of flows 0-3 (mean) | worst share error |"
)
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for (tr, wl, sc), g in ok.groupby(["trace", "workload", "scheme"], sort=False):
    sh = pd.DataFrame(g["shares"].tolist()).mean()
    err = g["err"].dropna()
    worst = f"{err.max() * 100:.0f} %" if len(err) else "(no weights)"
    per_run = " / ".join(f"{v:.0f}" for v in g.sort_values("run")["p95"])
    print(
        f"| {tr} | {wl} | {sc} | {len(g)} | {g['agg'].mean():.2f} | {g['p95'].mean():.1f} | {per_run} | "
        f"{' / '.join(f'{v:.3f}' for v in sh)} | {worst} |"
    )
print()
print("| trace | workload | aggregate coupled / uncoupled | p95 uncoupled / coupled (means) | p95 per run |")
print("| --- | --- | --- | --- | --- |")
for (tr, wl), g in ok.groupby(["trace", "workload"], sort=False):
    # Copa's drain-check variant (`alcc-copa:mode=drain+X`), or bare `alcc-copa+X` in sweeps
    # from before the authors' mode switch became Copa's default.
    c = g[g["scheme"].isin(["alcc-copa:mode=drain+coupled", "alcc-copa+coupled"])].sort_values("run")
    u = g[g["scheme"].isin(["alcc-copa:mode=drain+uncoupled", "alcc-copa+uncoupled"])].sort_values("run")
    if c.empty or u.empty:
        continue
    per_run = " / ".join(f"{a / b:.2f}" for a, b in zip(u["p95"], c["p95"], strict=True))
    agg = c["agg"].mean() / u["agg"].mean()
    p95 = u["p95"].mean() / c["p95"].mean()
    print(f"| {tr} | {wl} | {agg:.3f} | {p95:.2f}x | {per_run} |")

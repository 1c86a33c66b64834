"""Tables of bench/coupled-cross-results.md from an output directory of the cross-traffic workloads of
experiments/coupled.toml: python3 bench/coupled_cross_table.py OUT (pandas; the report's venv has it).

Per run, from each run's flow-series.csv (500 ms bins): the cross flow's mean throughput over the bins
of its on periods, the scheme's 4 flows' summed throughput over the same bins and over the other bins
of the run, the cross flow's share of the two; then medians over runs per trace, workload and scheme.
"""
import sys, json
from pathlib import Path
import pandas as pd

out = Path(sys.argv[1])
doc = json.loads((out / "results.json").read_text())
spec = doc["spec"]
on = {w["name"]: w["cross"][0]["on_s"] for w in spec["workloads"]}
rows = []
for r in doc["runs"]:
    if r["status"] != "ok":
        rows.append(dict(trace=r["trace"], workload=r["workload"], scheme=r["scheme"], run=r["run"], ok=False))
        continue
    fs = pd.read_csv(out / r["dir"] / "flow-series.csv")
    periods = on[r["workload"]]
    t = fs["start_s"]
    inside = pd.Series(False, index=fs.index)
    for a, b in periods:
        inside |= (t >= a + 0.5) & (t < b + 0.5)
    # bins within the run (clients' start to deadline)
    run = (t >= 0.5) & (t < spec["duration_s"] + 0.5)
    cross = fs["flow"].str.startswith("cross-")
    def mean_sum(mask):  # mean over bins of the summed throughput of the selected flows
        sel = fs[mask]
        return sel.groupby("start_s")["throughput_mbps"].sum().mean()
    c_on = mean_sum(inside & cross)
    s_on = mean_sum(inside & ~cross)
    s_off = mean_sum(run & ~inside & ~cross)
    pf = {f["flow"]: f for f in r["per_flow"]}
    cname = [k for k in pf if k.startswith("cross-")][0]
    rows.append(dict(trace=r["trace"], workload=r["workload"], scheme=r["scheme"], run=r["run"], ok=True,
                     cross_on=c_on, scheme_on=s_on, share_on=c_on / (c_on + s_on), scheme_off=s_off,
                     cross_p95=pf[cname]["delay_p95_ms"], flows_p95=r["flows_delay_p95_ms"],
                     link_p95=r["delay_p95_ms"], jain=r["jain_index"], link=r["throughput_mbps"],
                     load=r["load_avg"]))
df = pd.DataFrame(rows)
print(f"runs ok: {int(df['ok'].sum())} of {len(df)}; load_avg at run ends: {df['load'].min():.1f}-{df['load'].max():.1f}")
ok = df[df["ok"]]
g = ok.groupby(["trace", "workload", "scheme"], sort=False)
med = g[["cross_on", "share_on", "scheme_on", "scheme_off", "cross_p95", "flows_p95", "link_p95", "jain", "link"]].median()
n = g.size()
print("| trace | workload | next to (4 flows) | runs | cross flow Mbit/s while on | its share of the link while on | the 4 flows while it is on | the 4 flows while it is off | cross flow p95 ms | 4 flows p95 ms | Jain (4 flows) |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for (tr, wl, sc), m in med.iterrows():
    print(f"| {tr} | {wl} | {sc} | {n[(tr, wl, sc)]} | {m.cross_on:.2f} | {m.share_on:.2f} | {m.scheme_on:.2f} | {m.scheme_off:.2f} | {m.cross_p95:.0f} | {m.flows_p95:.0f} | {m.jain:.3f} |")
print()
print("ratios (same sweep): cross flow's throughput while on, next to coupled / next to uncoupled / next to 4 CUBIC flows")
for (tr, wl), m in med.groupby(level=[0, 1]):
    m = m.droplevel([0, 1])
    c = m["cross_on"]
    def r(a, b):
        return c.get(a, float("nan")) / c.get(b, float("nan"))
    # Copa's drain-check variant (`alcc-copa:mode=drain+X`), or bare `alcc-copa+X` in sweeps
    # from before the authors' mode switch became Copa's default.
    cp, un = (next((s for s in (f"alcc-copa:mode=drain+{x}", f"alcc-copa+{x}") if s in m.index), f"alcc-copa+{x}") for x in ("coupled", "uncoupled"))
    print(f"- {tr} {wl}: coupled/uncoupled {r(cp, un):.2f}, coupled/tcp-cubic {r(cp, 'tcp-cubic'):.2f}, uncoupled/tcp-cubic {r(un, 'tcp-cubic'):.2f}; 4-flow p95 coupled/uncoupled {m.loc[cp,'flows_p95']/m.loc[un,'flows_p95']:.2f}")
print()
print("per run:")
print(df.to_string(index=False, float_format=lambda x: f"{x:.2f}"))

"""Median (and p75, p95) flow completion time per size class from bench/fct.sh's output, and
each alcc-X@alcc:follow against tcp-X as a ratio (issue 10 item 5: median within 10 %)."""

import statistics
import sys
from pathlib import Path

CLASSES = [
    ("10-100 KB", 1e4, 1e5),
    ("100 KB-1 MB", 1e5, 1e6),
    ("1-10 MB", 1e6, 1e7 + 1),
]
PAIRS = [("alcc-reno@alcc:follow", "tcp-reno"), ("alcc-cubic@alcc:follow", "tcp-cubic")]


def load(path: Path) -> list[tuple[float, float]]:
    rows = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2:
            rows.append((float(parts[0]), float(parts[1])))
    return rows


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main(out: Path) -> None:
    print(
        "| link | size class | scheme | flows | median FCT s | p75 | p95 | median vs kernel |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for link in sorted(p for p in out.iterdir() if p.is_dir()):
        runs = {p.stem: load(p) for p in link.glob("*.txt")}
        for name, lo, hi in CLASSES:
            for subject, reference in PAIRS:
                for scheme in (reference, subject):
                    fct = [t for s, t in runs.get(scheme, []) if lo <= s < hi]
                    if not fct:
                        continue
                    ref = [t for s, t in runs.get(reference, []) if lo <= s < hi]
                    ratio = (
                        f"{statistics.median(fct) / statistics.median(ref):.2f}"
                        if scheme == subject and ref
                        else ""
                    )
                    print(
                        f"| {link.name} | {name} | {scheme} | {len(fct)} | {statistics.median(fct):.3f} | "
                        f"{quantile(fct, 0.75):.3f} | {quantile(fct, 0.95):.3f} | {ratio} |"
                    )


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "results/fct"))

"""``fairpack bench report``: a Markdown summary and PNG plots of a result table.

* ``report.md``: statuses and verification; per grid (per grid and kind, for a grid of instance files
  that mixes kinds), one line per method (label and backend) with its
  statuses, gap to the exact reference (mean, median, worst), median solve time, peak memory and the
  kind's fairness numbers; the fitted scaling exponents; the DAG-job trade-off table.
* ``gap_cdf.png``: per grid, the empirical CDF of every heuristic's gap to the grid's exact reference
  (positive = worse; see ``solver.bench.table`` for the sign convention).
* ``scaling.png``: per grid with at least two sizes, every exact method's solve time against the
  family's size on log-log axes, with the least-squares line through the runs that proved optimality;
  its slope is the fitted exponent (time ~ size^slope). Other runs (time limits) are drawn as crosses.
* ``tradeoff.png``: per DAG-job grid, the fairness/JCT/makespan triangle as three scatter panels (Jain
  vs avg JCT, Jain vs makespan, makespan vs avg JCT). JCT and makespan are divided by the best value any
  method reached on the same instance (1 = best), so instances of different sizes share the axes; small
  dots are instances, large ones each method's mean.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairpack.models.generators.families import FAMILIES
from fairpack.solver.bench.files import FILE_FAMILY
from fairpack.solver.bench.table import read_results

GAP_NOTE = (
    "Gaps are to the grid's exact reference on the same instance, signed so that positive is worse: "
    "(reference - objective) / reference for maximised objectives (min weighted dominant share, min "
    "share/guarantee), (objective - reference) / reference for minimised ones (avg JCT, makespan). A negative "
    "gap against a proven optimum is impossible; against `hdrf` it is not, because H-DRF guarantees every "
    "node its share but does not maximise the smallest share/guarantee ratio."
)
_PLOTS = {"gap": "gap_cdf.png", "scaling": "scaling.png", "tradeoff": "tradeoff.png"}


def fmt_num(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "inf" if isinstance(value, float) and math.isinf(value) else "-"
    return f"{value:.{digits}g}"


def fmt_pct(value: Any) -> str:
    if value is None or not np.isfinite(value):
        return "-"
    return "0.0%" if abs(value) < 5e-4 else f"{100 * value:+.1f}%"  # no "-0.0%" for solver noise


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _statuses(series: pd.Series) -> str:
    return ", ".join(f"{status} {count}" for status, count in series.value_counts().items())


def _mean(frame: pd.DataFrame, column: str) -> float | None:
    if column not in frame.columns:
        return None
    values = pd.to_numeric(frame[column], errors="coerce").dropna()
    return float(values.mean()) if len(values) else None


def _kind_columns(kind: str, frame: pd.DataFrame) -> list[tuple[str, str]]:
    """(header, column) of the fairness numbers shown for a kind."""
    if kind == "jobs":
        columns = [("avg JCT", "avg_jct"), ("p95 JCT", "p95_jct"), ("makespan", "makespan"), ("Jain", "jain"),
                   ("late jobs", "late")]  # fmt: skip
        if "best_known_gap" in frame.columns and frame["best_known_gap"].notna().any():
            columns.append(("over best known", "best_known_gap"))
        return columns
    columns = [("min dom. share", "min_dominant_share")]
    if kind == "hierarchy":
        columns += [
            ("min share/guar.", "min_share_guarantee"),
            ("nodes below guar.", "guarantee_violations"),
            ("time-avg share/guar.", "avg_min_share_guarantee"),
            ("starving time", "starving_time"),
        ]
    utilisation = sorted(c for c in frame.columns if c.startswith("util_") and frame[c].notna().any())
    return columns + [(f"util {c[5:]}", c) for c in utilisation]


def _family_summary(name: str) -> str:
    if name == FILE_FAMILY:
        return "the sweep's own instance files"
    return FAMILIES[name].summary if name in FAMILIES else "not a registered family"


def _grid_section(grid: str, frame: pd.DataFrame, title: str = "") -> list[str]:
    first = frame.iloc[0]
    kind, sense = str(first["kind"]), str(first["sense"])
    objective = str(frame["objective_name"].dropna().iloc[0]) if frame["objective_name"].notna().any() else "-"
    instances = frame["instance_key"].nunique()
    lines = [f"## Grid `{grid}`{title}", "",
             f"Family `{first['family']}` ({_family_summary(str(first['family']))}; {kind}), {instances} instances; "
             f"objective: {objective} "
             f"({'maximised' if sense == 'max' else 'minimised'})."]  # fmt: skip
    references = frame.drop_duplicates("instance_key")
    if references["reference"].notna().any():
        label = references["reference"].dropna().iloc[0]
        proven = int((references["reference_status"] == "optimal").sum())
        lines[-1] += f" Gaps are against `{label}`, which proved optimality on {proven} of {instances} instances."
        unproven = references.loc[references["reference_status"] != "optimal", ["instance", "reference_status"]]
        for _, row in unproven.iterrows():
            lines.append(f"- `{row['instance']}`: reference status {row['reference_status']} "
                         f"(gaps there are against its best answer, not a proven optimum)")  # fmt: skip
    else:
        lines[-1] += " The grid has no exact method, so no gaps."
    extra = _kind_columns(kind, frame)
    header = ["method", "backend", "exact", "rows", "statuses", "verified", "gap mean", "gap median", "gap worst",
              "solve s (median)", "peak MiB", *[h for h, _ in extra]]  # fmt: skip
    rows = []
    for (method, backend), group in frame.groupby(["method", "backend"], sort=False):
        gaps = pd.to_numeric(group["gap"], errors="coerce").dropna()
        worst = gaps.max() if len(gaps) else None
        solve = pd.to_numeric(group["solve_s"], errors="coerce").dropna()
        rows.append([f"`{method}`", str(backend), "yes" if bool(group["exact"].iloc[0]) else "no", str(len(group)),
                     _statuses(group["status"]), f"{int(group['verified'].astype(bool).sum())}/{len(group)}",
                     fmt_pct(gaps.mean() if len(gaps) else None), fmt_pct(gaps.median() if len(gaps) else None),
                     fmt_pct(worst), fmt_num(solve.median() if len(solve) else None),
                     fmt_num(_max(group, "peak_rss_mb"), 4),
                     *[fmt_pct(_mean(group, column)) if column.endswith("gap") else fmt_num(_mean(group, column))
                       for _, column in extra]])  # fmt: skip
    return [*lines, "", *markdown_table(header, rows), ""]


def _max(frame: pd.DataFrame, column: str) -> float | None:
    values = pd.to_numeric(frame.get(column, pd.Series(dtype=float)), errors="coerce").dropna()
    return float(values.max()) if len(values) else None


def scaling_fits(frame: pd.DataFrame) -> pd.DataFrame:
    """Per grid and exact method/backend: runs, sizes and the log-log least-squares slope of solve time.

    ``sizes`` counts the grid's size-parameter settings (seeds of one setting can differ in size, e.g. a
    DAG family's task count, but that is no scaling study). The fit uses the runs that proved optimality
    with a positive solve time, against the family's size of each instance; it needs two distinct sizes.
    """
    exact = frame[frame["exact"].astype(bool)]
    records = []
    for (grid, method, backend), group in exact.groupby(["grid", "method", "backend"], sort=False):
        done = group[(group["status"] == "optimal") & (pd.to_numeric(group["solve_s"], errors="coerce") > 0)]
        size = pd.to_numeric(done["size"], errors="coerce").to_numpy(dtype=float)
        seconds = pd.to_numeric(done["solve_s"], errors="coerce").to_numpy(dtype=float)
        keep = np.isfinite(size) & (size > 0)
        slope = None
        if len(np.unique(size[keep])) >= 2:
            slope = float(np.polyfit(np.log(size[keep]), np.log(seconds[keep]), 1)[0])
        records.append({"grid": grid, "family": group["family"].iloc[0], "method": method, "backend": backend,
                        "size_label": group["size_label"].dropna().iloc[0] if group["size_label"].notna().any()
                        else "size", "runs": len(group), "fitted_runs": int(keep.sum()),
                        "sizes": group["size_params"].nunique(), "exponent": slope})  # fmt: skip
    return pd.DataFrame(records)


def _scaling_section(fits: pd.DataFrame) -> list[str]:
    lines = ["## Solve time against size", ""]
    usable = fits[fits["sizes"] >= 2] if not fits.empty else fits
    if usable.empty:
        return [*lines, "No exact method ran at two or more sizes.", ""]
    lines += ["Least-squares slope of log(solve time) on log(size) over the runs that proved optimality: "
              "time grows as size^exponent.", "", f"![solve time against size]({_PLOTS['scaling']})", ""]  # fmt: skip
    rows = [[f"`{r.grid}`", str(r.family), f"`{r.method}`", str(r.backend), str(r.size_label),
             f"{r.fitted_runs}/{r.runs}", fmt_num(r.exponent)] for r in usable.itertuples()]  # fmt: skip
    return [*lines, *markdown_table(["grid", "family", "method", "backend", "size", "fitted runs", "exponent"], rows),
            ""]  # fmt: skip


def tradeoff_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Verified rows of DAG-job grids with a heuristic, with ``jct_ratio`` and ``makespan_ratio``: avg JCT and
    makespan divided by the best any method reached on the same instance."""
    compared = frame.groupby("grid")["exact"].transform(lambda exact: not exact.astype(bool).all())
    jobs = frame[(frame["kind"] == "jobs") & frame["verified"].astype(bool) & compared].copy()
    if jobs.empty or "avg_jct" not in jobs.columns:
        return jobs
    for column, ratio in (("avg_jct", "jct_ratio"), ("makespan", "makespan_ratio")):
        values = pd.to_numeric(jobs[column], errors="coerce")
        best = values.groupby(jobs["instance_key"]).transform("min")
        jobs[ratio] = values / best.where(best > 0)
    return jobs


def _tradeoff_section(jobs: pd.DataFrame) -> list[str]:
    if jobs.empty or "jct_ratio" not in jobs.columns:
        return []
    lines = ["## Fairness, JCT and makespan (DAG jobs)", "",
             "Avg JCT and makespan as multiples of the best any method reached on the same instance (1 = best); "
             "Jain's index over time windows (1 = equal dominant shares); late = jobs finishing after their "
             "fair-share completion time T_k, over all instances.", "",
             f"![fairness, JCT and makespan]({_PLOTS['tradeoff']})", ""]  # fmt: skip
    rows = []
    for (grid, method), group in jobs.groupby(["grid", "method"], sort=False):
        late = pd.to_numeric(group["late"], errors="coerce").sum()
        total = pd.to_numeric(group["jobs"], errors="coerce").sum()
        rows.append([f"`{grid}`", f"`{method}`", str(group["instance_key"].nunique()), fmt_num(_mean(group, "jain")),
                     fmt_num(_mean(group, "jct_ratio")), fmt_num(_mean(group, "makespan_ratio")),
                     f"{int(late)}/{int(total)}"])  # fmt: skip
    header = ["grid", "method", "instances", "Jain (mean)", "avg JCT / best", "makespan / best", "late / jobs"]
    return [*lines, *markdown_table(header, rows), ""]


# --- plots ---------------------------------------------------------------------------------------------


def panels(count: int, columns: int, width: float = 5.0, height: float = 3.6) -> tuple[Any, list[Any]]:
    """A figure of ``count`` panels in rows of ``columns``.

    Built as a ``matplotlib.figure.Figure`` without pyplot: no global backend switch (a notebook that
    calls this keeps its inline backend) and nothing to close, as no figure manager holds it.
    """
    from matplotlib.figure import Figure

    rows = math.ceil(count / columns)
    figure = Figure(figsize=(width * columns, height * rows))
    axes = figure.subplots(rows, columns, squeeze=False)
    flat = list(axes.ravel())
    for axis in flat[count:]:
        axis.set_visible(False)
    return figure, flat[:count]


def save_png(figure: Any, path: Path, title: str) -> None:
    """Title the figure, lay it out below the title, write it as a PNG and free it."""
    figure.suptitle(title, fontsize=11)
    height = figure.get_figheight()
    figure.tight_layout(rect=(0.0, 0.0, 1.0, 1.0 - 0.45 / height))  # leave the title about 0.45 inch
    figure.savefig(path, dpi=120)


def plot_gap_cdf(frame: pd.DataFrame, path: Path) -> bool:
    """One panel per grid with heuristic gaps: the empirical CDF of each heuristic's gap, in percent."""
    heuristics = frame[~frame["exact"].astype(bool) & pd.to_numeric(frame["gap"], errors="coerce").notna()]
    grids = list(dict.fromkeys(heuristics["grid"]))
    if not grids:
        return False
    figure, axes = panels(len(grids), min(2, len(grids)))
    for axis, grid in zip(axes, grids, strict=True):
        group = heuristics[heuristics["grid"] == grid]
        for method, rows in group.groupby("method", sort=False):
            gaps = np.sort(100 * pd.to_numeric(rows["gap"]).to_numpy(dtype=float))
            fraction = np.arange(1, gaps.size + 1) / gaps.size
            axis.step(np.concatenate([[gaps[0]], gaps]), np.concatenate([[0.0], fraction]), where="post",
                      label=f"{method} (n={gaps.size})")  # fmt: skip
        axis.axvline(0.0, color="grey", linewidth=0.8)
        reference = group["reference"].dropna()
        axis.set_title(f"{grid}: gap to {reference.iloc[0] if len(reference) else 'exact'}", fontsize=10)
        axis.set_xlabel("gap to the exact reference (%), positive = worse")
        axis.set_ylabel("fraction of instances")
        axis.set_ylim(0, 1.02)
        axis.legend(fontsize=8)
    save_png(figure, path, "gap of every heuristic to the exact reference, per grid")
    return True


def plot_scaling(frame: pd.DataFrame, fits: pd.DataFrame, path: Path) -> bool:
    """One panel per grid with two or more sizes: exact solve time against size, log-log, with fitted lines."""
    if fits.empty:
        return False
    grids = list(dict.fromkeys(fits.loc[fits["sizes"] >= 2, "grid"]))
    if not grids:
        return False
    figure, axes = panels(len(grids), min(2, len(grids)))
    for axis, grid in zip(axes, grids, strict=True):
        for fit in fits[(fits["grid"] == grid) & (fits["sizes"] >= 2)].itertuples():
            rows = frame[(frame["grid"] == grid) & (frame["method"] == fit.method) & (frame["backend"] == fit.backend)]
            size = pd.to_numeric(rows["size"], errors="coerce").to_numpy(dtype=float)
            seconds = np.maximum(pd.to_numeric(rows["solve_s"], errors="coerce").to_numpy(dtype=float), 1e-4)
            proven = (rows["status"] == "optimal").to_numpy()
            fitted = pd.notna(fit.exponent)
            label = f"{fit.method}/{fit.backend}" + (f" (slope {fit.exponent:.2f})" if fitted else "")
            line = axis.loglog(size[proven], seconds[proven], "o", markersize=4, label=label)[0]
            axis.loglog(size[~proven], seconds[~proven], "x", color=line.get_color(), markersize=6)
            if fitted and proven.any():
                xs = np.unique(size[proven & (size > 0)])
                intercept = np.mean(np.log(seconds[proven]) - fit.exponent * np.log(size[proven]))
                axis.loglog(xs, np.exp(intercept) * xs**fit.exponent, "-", color=line.get_color(), linewidth=1)
        _size_ticks(axis, pd.to_numeric(frame.loc[frame["grid"] == grid, "size"], errors="coerce").dropna())
        axis.set_title(grid, fontsize=10)
        axis.set_xlabel(str(fits.loc[fits["grid"] == grid, "size_label"].iloc[0]))
        axis.set_ylabel("solve time (s)")
        axis.legend(fontsize=8)
    save_png(figure, path, "solve time against size (o: proven optimal, fitted; x: stopped by the time limit)")
    return True


def _size_ticks(axis: Any, sizes: pd.Series) -> None:
    """Plain-number ticks on a log size axis: at the sizes themselves when there are few, else 1-2-5 steps."""
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullLocator

    values = np.unique(sizes[sizes > 0])
    if 0 < values.size <= 8:
        axis.set_xticks(values)
    else:
        axis.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.xaxis.set_major_formatter(FormatStrFormatter("%g"))
    axis.xaxis.set_minor_locator(NullLocator())  # minor labels collide on short ranges


def plot_tradeoff(jobs: pd.DataFrame, path: Path) -> bool:
    """Per DAG-job grid, three panels: Jain vs avg JCT, Jain vs makespan, makespan vs avg JCT."""
    if jobs.empty or "jct_ratio" not in jobs.columns:
        return False
    grids = list(dict.fromkeys(jobs["grid"]))
    pairs = (("jct_ratio", "jain", "avg JCT / best", "Jain index"),
             ("makespan_ratio", "jain", "makespan / best", "Jain index"),
             ("jct_ratio", "makespan_ratio", "avg JCT / best", "makespan / best"))  # fmt: skip
    figure, axes = panels(3 * len(grids), 3, width=4.4, height=3.6)
    markers = "osD^vP*Xh<>"
    for row, grid in enumerate(grids):
        group = jobs[jobs["grid"] == grid]
        for column, (x, y, x_label, y_label) in enumerate(pairs):
            axis = axes[3 * row + column]
            for position, (method, rows) in enumerate(group.groupby("method", sort=False)):
                xs, ys = pd.to_numeric(rows[x], errors="coerce"), pd.to_numeric(rows[y], errors="coerce")
                marker = markers[position % len(markers)]
                dots = axis.scatter(xs, ys, s=12, alpha=0.35, marker=marker)
                axis.scatter([xs.mean()], [ys.mean()], s=90, marker=marker, color=dots.get_facecolor()[0][:3],
                             edgecolors="black", linewidths=0.6, label=str(method))  # fmt: skip
            axis.set_xlabel(x_label)
            axis.set_ylabel(y_label)
            axis.set_title(grid if column == 1 else "", fontsize=10)
        axes[3 * row].legend(fontsize=7)
    save_png(figure, path, "fairness, JCT and makespan of every method (large: mean over instances)")
    return True


# --- the report ----------------------------------------------------------------------------------------


def write_report(results: str | Path, out: str | Path | None = None) -> Path:
    """Write ``report.md`` and the PNG plots for the table at ``results``; returns the Markdown path.

    Parameters
    ----------
    results
        A Parquet table written by ``fairpack bench run`` (or its CSV copy).
    out
        The folder to write to (created); default: ``<results stem>_report`` next to the table.
    """
    results = Path(results)
    folder = Path(out) if out is not None else results.with_name(results.stem + "_report")
    folder.mkdir(parents=True, exist_ok=True)
    frame = read_results(results)
    lines = [f"# Benchmark report: {', '.join(map(str, pd.unique(frame['sweep']))) if len(frame) else 'empty'}", ""]
    if frame.empty:
        (folder / "report.md").write_text("\n".join([*lines, f"`{results}` has no rows."]) + "\n")
        return folder / "report.md"
    unverified = frame[~frame["verified"].astype(bool)]
    verification = "all rows verified."
    if not unverified.empty:
        listed = ", ".join(f"`{key}` ({status})" for key, status in unverified[["key", "status"]].head(10).to_numpy())
        verification = f"**{len(unverified)} rows did not verify** (status and message in the table): {listed}."
    lines += [
        f"{len(frame)} rows from `{results.name}`: {frame['instance_key'].nunique()} instances in "
        f"{frame['grid'].nunique()} grids. Statuses: {_statuses(frame['status'])}.",
        "",
        f"Every row's solution is re-verified from the instance by `models.check`; {verification}",
        "",
        GAP_NOTE,
        "",
    ]
    for grid, group in frame.groupby("grid", sort=False):
        kinds = list(dict.fromkeys(group["kind"]))
        for kind in kinds:  # a grid of instance files may mix kinds: one section each
            title = f", {kind} instances" if len(kinds) > 1 else ""
            lines += _grid_section(str(grid), group[group["kind"] == kind], title)
    if plot_gap_cdf(frame, folder / _PLOTS["gap"]):
        lines += ["## Gap CDF per heuristic", "", f"![gap CDF]({_PLOTS['gap']})", ""]
    fits = scaling_fits(frame)
    plot_scaling(frame, fits, folder / _PLOTS["scaling"])
    lines += _scaling_section(fits)
    jobs = tradeoff_table(frame)
    if plot_tradeoff(jobs, folder / _PLOTS["tradeoff"]):
        lines += _tradeoff_section(jobs)
    path = folder / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path

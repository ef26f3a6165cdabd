"""``fairpack bench figures``: the four benchmark figures (``benchmarks/README.md``), from real sweep tables.

Each figure is a Markdown section (tables of numbers measured in the run) and a PNG, written to one folder,
and the sections are spliced into a README (``--readme``) between the markers ``<!-- figures:begin -->`` and
``<!-- figures:end -->`` so that ``make figures`` regenerates them with one command.

1. DRFH against First-Fit, Best-Fit and slots (grids of flat tenants with heuristics): the smallest weighted
   dominant share ``f`` as a ratio to the exact ``drfh`` and utilisation per resource, beside the DRFH
   paper's slot table (best slot count: 43.9% CPU, 28.0% memory on the Google trace).
2. Static H-DRF against collapsed, naive and dynamic H-DRF and hierarchical slots (hierarchy grids with
   heuristics): share-guarantee violations, smallest share/guarantee and starvation time.
3. Carbyne against DRF, Tetris, SJF and the exact space-time optimum (DAG-job grids with heuristics): avg
   JCT, makespan and Jain's index, and the Carbyne paper's headline ratios against DRF measured the same way
   (1.59x lower avg JCT, 1.26x better efficiency, i.e. makespan, Jain within 0.05 of DRF's).
4. Solver scaling (grids whose methods are all exact): solve time against size per method and backend.

Which grid goes to which figure is read from the table (its kind, and whether it holds heuristics), not
from a list of names, so a sweep file can add grids without touching this module.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairpack.solver.bench.report import (
    fmt_num,
    fmt_pct,
    markdown_table,
    panels,
    plot_scaling,
    plot_tradeoff,
    save_png,
    scaling_fits,
    tradeoff_table,
)
from fairpack.solver.bench.table import read_results

BEGIN, END = "<!-- figures:begin -->", "<!-- figures:end -->"
#: The DRFH paper's slot table (Google trace): its best slot count reached these utilisations.
DRFH_PAPER_BEST_SLOTS = {"cpu": 0.439, "mem": 0.280}
#: Where that table comes from (not the experiment Figure 1 runs).
DRFH_PAPER_EXPERIMENT = "a 24-hour replay of the Google cluster trace on 2,000 machines"
#: The Carbyne paper's headline against DRF: avg JCT ratio, makespan ratio, largest drop in Jain's index.
CARBYNE_PAPER = {"jct": 1.59, "makespan": 1.26, "jain_drop": 0.05}
FILES = {"drfh": "fig1_drfh.png", "hdrf": "fig2_hdrf.png", "carbyne": "fig3_carbyne.png",
         "scaling": "fig4_scaling.png"}  # fmt: skip


def _numeric(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame.columns:
        return pd.Series(np.nan, index=frame.index, dtype=float)
    return pd.to_numeric(frame[column], errors="coerce")


def _geometric_mean(values: pd.Series) -> float | None:
    values = values[np.isfinite(values) & (values > 0)]
    return float(np.exp(np.log(values).mean())) if len(values) else None


def _compared_grids(frame: pd.DataFrame, kind: str) -> list[str]:
    """Grids of ``kind`` that hold both an exact method and at least one heuristic, in table order."""
    chosen = []
    for grid, group in frame[frame["kind"] == kind].groupby("grid", sort=False):
        exact = group["exact"].astype(bool)
        if exact.any() and not exact.all():
            chosen.append(str(grid))
    return chosen


def _grid_caption(group: pd.DataFrame) -> str:
    """The grid, its family, and the size parameters: those that vary as lists, the others once."""
    params = [json.loads(text) for text in group["params"].dropna().unique() if str(text).startswith("{")]
    names = list(dict.fromkeys(name for p in params for name in p))
    described = []
    for name in names:
        values = list(dict.fromkeys(str(p.get(name)) for p in params))
        described.append(f"{name} {'/'.join(values)}" if len(values) > 1 else f"{name} {values[0]}")
    seeds = group["seed"].nunique()
    return (f"`{group['grid'].iloc[0]}`: family `{group['family'].iloc[0]}`, {group['instance_key'].nunique()} "
            f"instances ({', '.join(described) or 'fixed'}; {seeds} seed{'s' if seeds != 1 else ''})")  # fmt: skip


def _utilisation_columns(frame: pd.DataFrame) -> list[str]:
    return sorted(c for c in frame.columns if c.startswith("util_") and _numeric(frame, c).notna().any())


# --- figure 1: DRFH ------------------------------------------------------------------------------------


def _slot_label(row: pd.Series) -> str:
    """``slots`` rows are named by their slot count (10 unless the options say otherwise)."""
    if row["solver_method"] != "slots":
        return str(row["method"])
    options = row.get("options")
    count = 10
    if isinstance(options, str) and options.strip().startswith("{"):
        count = int(json.loads(options).get("slots", 10))
    return f"slots (k={count})"


def _contention(exact: pd.DataFrame) -> list[str]:
    """How many instances are contended: exact ``drfh`` leaves some tenant below its task cap.

    On the others every tenant gets all it asked for, so ``f`` is only the largest cap level and every
    method that satisfies everyone ties: such instances say nothing about fairness under contention.
    """
    below = _numeric(exact, "below_cap")
    if below.isna().all():
        return []
    contended = int((below > 0).sum())
    line = (f"Contended instances: {contended}/{len(exact)} (exact `drfh` leaves at least one tenant below "
            f"its task cap; {fmt_num(float(below.mean()))} such tenants per instance on average).")
    if contended < len(exact):
        line += (" On the others every tenant gets all it asked for, so `f` is just the largest cap level and "
                 "methods that satisfy everyone tie.")
    return [line, ""]


def drfh_section(frame: pd.DataFrame, folder: Path, prefix: str = "") -> list[str]:
    grids = _compared_grids(frame, "flat")
    if not grids:
        return []
    lines = ["### Figure 1. DRFH against First-Fit, Best-Fit and slots", "",
             "`f` is the smallest weighted global dominant share of a tenant that is not at its task cap (what "
             "DRFH's first round maximises), as a ratio to exact `drfh` on the same instance (mean, and worst "
             "over the instances); utilisation is the fraction of each resource allocated, mean over "
             "instances. Slot schedulers cut the largest machine into k equal slots; a task takes one slot if "
             "it fits. Every instance is one allocation of a static backlog: the tenants ask for more than the "
             "cluster holds (task caps), and each method fills the cluster once.", ""]  # fmt: skip
    by_grid: list[tuple[str, pd.DataFrame]] = []
    for grid in grids:
        group = frame[frame["grid"] == grid].copy()
        group["label"] = group.apply(_slot_label, axis=1)
        utilisation = _utilisation_columns(group)
        exact = group[group["exact"].astype(bool)].drop_duplicates("instance_key")
        exact_f = exact.set_index("instance_key")["objective"]
        group["f_ratio"] = _numeric(group, "objective") / group["instance_key"].map(exact_f).astype(float)
        rows, summary = [], []
        for label, rows_of in group.groupby("label", sort=False):
            ratio = rows_of["f_ratio"]
            means = {c: float(_numeric(rows_of, c).mean()) for c in utilisation}
            summary.append({"label": label, "f_mean": float(ratio.mean()), "f_worst": float(ratio.min()), **means})
            rows.append([f"`{label}`", fmt_num(ratio.mean()), fmt_num(ratio.min()),
                         *[f"{100 * means[c]:.1f}%" for c in utilisation],
                         fmt_num(float(_numeric(rows_of, "solve_s").median())),
                         f"{int(rows_of['verified'].astype(bool).sum())}/{len(rows_of)}"])  # fmt: skip
        header = ["method", "f / drfh (mean)", "f / drfh (worst)", *[f"{c[5:]} util." for c in utilisation],
                  "solve s (median)", "verified"]  # fmt: skip
        lines += [f"**{_grid_caption(group)}**", "", *_contention(exact), *markdown_table(header, rows), ""]
        slots = [s for s in summary if str(s["label"]).startswith("slots")]
        if slots and {"util_cpu", "util_mem"} <= set(utilisation):
            best = max(slots, key=lambda s: s["util_cpu"] + s["util_mem"])
            lines += [f"Best slot count here: {best['label']} with {100 * best['util_cpu']:.1f}% CPU and "
                      f"{100 * best['util_mem']:.1f}% memory.", ""]  # fmt: skip
        by_grid.append((grid, pd.DataFrame(summary)))
    lines += [f"The DRFH paper's slot table (best slot count: {100 * DRFH_PAPER_BEST_SLOTS['cpu']:.1f}% CPU and "
              f"{100 * DRFH_PAPER_BEST_SLOTS['mem']:.1f}% memory utilisation) comes from {DRFH_PAPER_EXPERIMENT}: "
              "tasks arrive and finish over the day, so its utilisation is a time average of an online "
              "scheduler. The rows here are one-shot allocations of a static backlog, a different experiment; "
              "compare the two only for the order of the methods, not the percentages.", ""]  # fmt: skip
    save_png(drfh_figure(by_grid), folder / FILES["drfh"],
             "fairness ratio f / drfh and utilisation per resource (exact DRFH and the heuristics)")
    return [*lines, f"![DRFH against the heuristics]({prefix}{FILES['drfh']})", ""]


def drfh_figure(by_grid: Sequence[tuple[str, pd.DataFrame]]) -> Any:
    """Figure 1's picture: per grid, the fairness ratio ``f / drfh`` (bars: mean over instances, black
    ticks: worst instance) beside the mean utilisation per resource, one bar per method."""
    figure, axes = panels(2 * len(by_grid), 2, width=6.0)
    for index, (grid, summary) in enumerate(by_grid):
        positions = np.arange(len(summary))
        fairness, used = axes[2 * index], axes[2 * index + 1]
        fairness.bar(positions, summary["f_mean"].fillna(0.0), 0.6, color="tab:purple", label="mean")
        fairness.scatter(positions, summary["f_worst"], marker="_", s=300, color="black", zorder=3,
                         label="worst instance")  # fmt: skip
        fairness.axhline(1.0, color="grey", linestyle="--", linewidth=1)
        fairness.set_ylabel("f / drfh")
        fairness.set_ylim(0, 1.3)  # room above the ratio 1 for the legend
        fairness.set_title(f"{grid}: fairness ratio", fontsize=10)
        fairness.legend(fontsize=8, loc="upper right", ncols=2)
        columns = [c for c in summary.columns if c.startswith("util_")]
        width = 0.8 / max(1, len(columns))
        for offset, column in enumerate(columns):
            used.bar(positions + offset * width, 100 * summary[column], width, label=column[5:])
        used.set_ylabel("utilisation (%)")
        used.set_ylim(0, 105)
        used.set_title(f"{grid}: utilisation", fontsize=10)
        if columns:
            used.legend(fontsize=8)
        for axis, shift in ((fairness, 0.0), (used, width * (len(columns) - 1) / 2)):
            axis.set_xticks(positions + shift, summary["label"], rotation=30, ha="right", fontsize=8)
    return figure


# --- figure 2: H-DRF -----------------------------------------------------------------------------------


def hdrf_section(frame: pd.DataFrame, folder: Path, prefix: str = "") -> list[str]:
    grids = _compared_grids(frame, "hierarchy")
    if not grids:
        return []
    lines = ["### Figure 2. Static H-DRF against collapsed, naive and dynamic H-DRF and hierarchical slots", "",
             "A node's hierarchical share guarantee is its weighted fraction of its parent's guarantee. Nodes "
             "below it: demanding nodes whose dominant share is below their guarantee (simulated schedulers: "
             "time-averaged after warm-up). Starving time: total time demanding leaves spent below half their "
             "guarantee in episodes longer than the threshold. Means over instances.", ""]  # fmt: skip
    header = ["method", "instances with every guarantee", "nodes below guarantee", "min share / guarantee",
              "starving time", "solve s (median)", "verified"]  # fmt: skip
    summaries: list[tuple[str, pd.DataFrame]] = []
    for grid in grids:
        group = frame[frame["grid"] == grid]
        rows, summary = [], []
        for method, rows_of in group.groupby("method", sort=False):
            violations = _numeric(rows_of, "guarantee_violations")
            starving = _numeric(rows_of, "starving_time").fillna(0.0)
            summary.append({"method": method, "violations": violations.mean(), "starving": starving.mean()})
            rows.append([f"`{method}`", f"{int((violations == 0).sum())}/{len(rows_of)}", fmt_num(violations.mean()),
                         fmt_num(_numeric(rows_of, "min_share_guarantee").mean()), fmt_num(starving.mean()),
                         fmt_num(float(_numeric(rows_of, "solve_s").median())),
                         f"{int(rows_of['verified'].astype(bool).sum())}/{len(rows_of)}"])  # fmt: skip
        lines += [f"**{_grid_caption(group)}**", "", *markdown_table(header, rows), ""]
        summaries.append((grid, pd.DataFrame(summary)))
    figure, axes = panels(2 * len(summaries), 2, width=5.0, height=3.2)
    for index, (grid, summary) in enumerate(summaries):
        for column, (key, label) in enumerate((("violations", "nodes below guarantee"),
                                               ("starving", "starving time"))):  # fmt: skip
            axis = axes[2 * index + column]
            axis.bar(summary["method"], summary[key], color="tab:red" if key == "starving" else "tab:blue")
            axis.set_title(f"{grid}: {label}", fontsize=10)
            axis.tick_params(axis="x", labelrotation=30, labelsize=8)
    save_png(figure, folder / FILES["hdrf"], "share-guarantee violations and starvation (mean over instances)")
    return [*lines, f"![H-DRF against the heuristics]({prefix}{FILES['hdrf']})", ""]


# --- figure 3: Carbyne ---------------------------------------------------------------------------------


def _paired_ratio(group: pd.DataFrame, column: str, numerator: str, denominator: str) -> pd.Series:
    """Per instance, ``column`` of method ``numerator`` over that of ``denominator``."""
    values = group.pivot_table(index="instance_key", columns="method", values=column, aggfunc="first")
    if numerator not in values or denominator not in values:
        return pd.Series(dtype=float)
    return (values[numerator] / values[denominator]).dropna()


def carbyne_headline(jobs: pd.DataFrame) -> dict[str, Any]:
    """The Carbyne paper's three numbers measured on ``jobs`` (rows of DAG-job grids), against ``drf-dag``.

    Returns the geometric means over instances of DRF's avg JCT and makespan over Carbyne's (above 1 means
    Carbyne is better), the mean and worst drop of Jain's index from DRF to Carbyne, and the instance count.
    """
    jobs = jobs.assign(avg_jct=_numeric(jobs, "avg_jct"), makespan=_numeric(jobs, "makespan"),
                       jain=_numeric(jobs, "jain"))  # fmt: skip
    jct = _paired_ratio(jobs, "avg_jct", "drf-dag", "carbyne")
    makespan = _paired_ratio(jobs, "makespan", "drf-dag", "carbyne")
    values = jobs.pivot_table(index="instance_key", columns="method", values="jain", aggfunc="first")
    drop = pd.Series(dtype=float)
    if {"carbyne", "drf-dag"} <= set(values.columns):
        drop = (values["drf-dag"] - values["carbyne"]).dropna()
    return {"instances": len(jct), "jct": _geometric_mean(jct), "makespan": _geometric_mean(makespan),
            "jain_drop_mean": float(drop.mean()) if len(drop) else None,
            "jain_drop_worst": float(drop.max()) if len(drop) else None,
            "carbyne_better_jct": int((jct > 1.0).sum())}  # fmt: skip


def carbyne_section(frame: pd.DataFrame, folder: Path, prefix: str = "") -> list[str]:
    grids = _compared_grids(frame, "jobs")
    if not grids:
        return []
    jobs = tradeoff_table(frame[frame["grid"].isin(grids)])
    lines = ["### Figure 3. Carbyne against DRF, Tetris, SJF and the exact space-time optimum", "",
             "Every job arrives at time 0. Avg JCT and makespan are divided by the best any method reached on "
             "the same instance (1 = best); the gap is to `spacetime-cp` (avg-JCT objective, warm-started from "
             "the best heuristic; where it stops at its time limit the gap is to its best schedule, not a proven "
             "optimum). `spacetime-cp` runs with `--no-fair-cap`, without the deadlines C_k <= T_k, so it may finish "
             "jobs late. Jain's index is over 20 time windows; late jobs finish after their fair-share completion "
             "T_k.", ""]  # fmt: skip
    header = ["method", "avg JCT / best", "makespan / best", "gap to exact (mean)", "Jain", "late / jobs",
              "solve s (median)"]  # fmt: skip
    headline_rows = []
    for grid in grids:
        group = jobs[jobs["grid"] == grid]
        if group.empty:
            continue
        rows = []
        for method, rows_of in group.groupby("method", sort=False):
            late, total = _numeric(rows_of, "late").sum(), _numeric(rows_of, "jobs").sum()
            proven = "" if not bool(rows_of["exact"].iloc[0]) else (
                f" ({int((rows_of['status'] == 'optimal').sum())}/{len(rows_of)} proven)")
            rows.append([f"`{method}`{proven}", fmt_num(rows_of["jct_ratio"].mean()),
                         fmt_num(rows_of["makespan_ratio"].mean()), fmt_pct(_numeric(rows_of, "gap").mean()),
                         fmt_num(_numeric(rows_of, "jain").mean()), f"{int(late)}/{int(total)}",
                         fmt_num(float(_numeric(rows_of, "solve_s").median()))])  # fmt: skip
        lines += [f"**{_grid_caption(frame[frame['grid'] == grid])}**", "", *markdown_table(header, rows), ""]
        numbers = carbyne_headline(group)
        if numbers["jct"] is not None:
            headline_rows.append([f"`{grid}`", str(numbers["instances"]), f"{numbers['jct']:.2f}x",
                                  f"{numbers['makespan']:.2f}x", f"{numbers['jain_drop_mean']:+.3f}",
                                  f"{numbers['jain_drop_worst']:+.3f}",
                                  f"{numbers['carbyne_better_jct']}/{numbers['instances']}"])  # fmt: skip
    if headline_rows:
        lines += ["Against the Carbyne paper's headline (DRF over Carbyne: avg JCT "
                  f"{CARBYNE_PAPER['jct']}x, makespan {CARBYNE_PAPER['makespan']}x; Carbyne's Jain index within "
                  f"{CARBYNE_PAPER['jain_drop']} of DRF's), measured per instance here (geometric means; "
                  "Jain drop = DRF's index minus Carbyne's):", "",
                  *markdown_table(["grid", "instances", "DRF / Carbyne avg JCT", "DRF / Carbyne makespan",
                                    "Jain drop (mean)", "Jain drop (worst)", "Carbyne faster"], headline_rows),
                  ""]  # fmt: skip
    plot_tradeoff(jobs, folder / FILES["carbyne"])
    return [*lines, f"![fairness, JCT and makespan]({prefix}{FILES['carbyne']})", ""]


# --- figure 4: scaling ---------------------------------------------------------------------------------


def scaling_section(frame: pd.DataFrame, folder: Path, prefix: str = "") -> list[str]:
    grids = [str(g) for g, group in frame.groupby("grid", sort=False) if group["exact"].astype(bool).all()]
    scaling = frame[frame["grid"].isin(grids)]
    fits = scaling_fits(scaling)
    if fits.empty or not plot_scaling(scaling, fits, folder / FILES["scaling"]):
        return []
    lines = ["### Figure 4. Solver scaling: exact methods and backends", "",
             "Median solve time at the smallest and the largest size of each grid, the runs that proved "
             "optimality, and the least-squares slope of log(time) on log(size) over them (time ~ size^slope).",
             ""]  # fmt: skip
    rows = []
    for fit in fits.itertuples():
        group = scaling[(scaling["grid"] == fit.grid) & (scaling["method"] == fit.method)
                        & (scaling["backend"] == fit.backend)]  # fmt: skip
        size = _numeric(group, "size")
        seconds = _numeric(group, "solve_s")
        small, large = size.min(), size.max()
        rows.append([f"`{fit.method}`", str(fit.backend), f"`{fit.grid}`", str(fit.size_label),
                     f"{fmt_num(small, 4)} - {fmt_num(large, 4)}",
                     f"{fmt_num(seconds[size == small].median())} - {fmt_num(seconds[size == large].median())}",
                     f"{int((group['status'] == 'optimal').sum())}/{len(group)}", fmt_num(fit.exponent)])  # fmt: skip
    header = ["method", "backend", "grid", "size", "sizes", "median solve s", "proven", "slope"]
    return [*lines, *markdown_table(header, rows), "",
            f"![solve time against size]({prefix}{FILES['scaling']})", ""]


# --- assembling ----------------------------------------------------------------------------------------


def figure_sections(tables: Sequence[str | Path], folder: str | Path, prefix: str = "") -> str:
    """The Markdown of all four figures from the result tables, with their PNGs written to ``folder``.

    ``prefix`` goes before every PNG's file name in the Markdown (the folder as seen from the page).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    frames = [read_results(path) for path in tables]
    frame = pd.concat([f for f in frames if not f.empty], ignore_index=True) if frames else pd.DataFrame()
    if frame.empty:
        return "No benchmark rows yet: run `make figures`.\n"
    sources = ", ".join(f"`{Path(path).name}`" for path in tables)
    lines = [f"From {sources}: {len(frame)} rows, {frame['instance_key'].nunique()} instances, "
             f"{int(frame['verified'].astype(bool).sum())} of them verified by `models.check`.{_load(frame)}",
             ""]  # fmt: skip
    for section in (drfh_section, hdrf_section, carbyne_section, scaling_section):
        lines += section(frame, folder, prefix)
    return "\n".join(lines)


def _load(frame: pd.DataFrame) -> str:
    """The machine's load when the tasks ran (rows from before ``load_1m`` was recorded are left out)."""
    load = _numeric(frame, "load_1m").dropna()
    if load.empty:
        return ""
    return (f" Machine load (one-minute average) when a task started: median "
            f"{load.median():.1f}, highest {load.max():.1f}, over the {len(load)} rows that recorded it.")


def splice(readme: str, sections: str) -> str:
    """``readme`` with the text between the figure markers replaced by ``sections``."""
    start, stop = readme.find(BEGIN), readme.find(END)
    if start < 0 or stop < start:
        from fairpack.solver.registry import OptionError

        raise OptionError(f"the README has no '{BEGIN}' ... '{END}' block to fill", "--readme")
    return readme[: start + len(BEGIN)] + "\n" + sections.rstrip() + "\n" + readme[stop:]


def write_figures(tables: Sequence[str | Path], folder: str | Path, readme: str | Path | None = None) -> Path:
    """Write ``figures.md`` and the PNGs to ``folder``; fill README's figure block when ``readme`` is given."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "figures.md"
    if readme is None:
        path.write_text(figure_sections(tables, folder))
        return path
    readme = Path(readme)
    prefix = os.path.relpath(folder.resolve(), readme.resolve().parent).replace(os.sep, "/") + "/"
    sections = figure_sections(tables, folder, prefix)
    path.write_text(sections.replace(f"]({prefix}", "]("))  # its PNGs lie beside it
    readme.write_text(splice(readme.read_text(), sections))
    return path

"""Redundant constraints tried on the proof phase of ``spacetime-cp`` on PSPLIB (``psplib_search.py proof``).

Each function adds implied constraints to a copy of the model ``solver.spacetime.cp.SpacetimeCp`` builds
for a PSPLIB instance (one task per stage, pooled placement, makespan), so the proof that nothing shorter
than the optimum exists may need fewer conflicts. None is in the solver: measured on the J30 instances that
stay unproven at 10 s, none proves more of them or proves them consistently faster
(``benchmarks/results/psplib_proof_models.md``).

* ``cliques``: a no-overlap over each clique of a greedy cover of the *incompatibility* graph (two tasks
  whose demands exceed a capacity together, or that precedences order), giving CP-SAT's disjunctive
  reasoning (edge finding, detectable precedences) sets the per-resource cumulatives hide from it.
* ``order``: one literal per resource-incompatible pair that no precedence orders, ``a`` before ``b`` or
  ``b`` before ``a``: the search can branch and learn on orders instead of start bounds.
* ``energy``: a precedence-energy bound per task: its transitive successors' work on each resource must fit
  between its end and the makespan (``M >= end + ceil(energy / capacity)``), its predecessors' before its
  start.
* ``delays``: the minimum delays between pairs of tasks with parallel branches between them, and each task's
  head and tail, each the makespan lower bound of the sub-project between them, solved by CP-SAT smallest
  first with the delays found so far (OR-Tools' ``rcpsp_sat.py`` preprocessing), as
  ``start(b) >= end(a) + delay``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from fairpack.models.dag import adjacency, reachability
from fairpack.models.types import IntArray


class Strengthened:
    """One PSPLIB model (``cp`` a built ``SpacetimeCp``) and its copy to which constraints are added."""

    def __init__(self, cp: Any) -> None:
        problem = cp.problem
        self.model = cp.model.clone()
        self.duration = problem.task_duration.astype(np.int64)
        self.demand = problem.scaled.demand[problem.flat.task_stage].astype(np.int64)
        self.capacity = problem.scaled.capacity.astype(np.int64)
        stage_reach = reachability(*adjacency(problem.flat.num_stages, problem.flat.edges.tolist()))
        self.reach = stage_reach[np.ix_(problem.flat.task_stage, problem.flat.task_stage)]
        self.edges = problem.flat.edges  # one task per stage on PSPLIB: stage = task
        self.start = [self.model.get_int_var_from_proto_index(v.index) for v in cp.start]
        self.interval = [self.model.get_interval_var_from_proto_index(v.index) for v in cp.interval]
        self.makespan = self.model.get_int_var_from_proto_index(cp.makespan.index)
        busy = self.duration > 0
        conflict = np.zeros(self.reach.shape, dtype=bool)
        for r in range(self.capacity.size):
            conflict |= self.demand[:, r][:, None] + self.demand[:, r][None, :] > self.capacity[r]
        self.conflict = conflict & busy[:, None] & busy[None, :]
        np.fill_diagonal(self.conflict, False)

    def cliques(self) -> int:
        """No-overlaps over a greedy clique cover of the conflict edges (cliques of 3 or more tasks)."""
        related = self.reach | self.reach.T
        adjacent = (self.conflict | related) & (self.duration > 0)[:, None] & (self.duration > 0)[None, :]
        np.fill_diagonal(adjacent, False)
        degree = adjacent.sum(axis=1)
        covered = np.zeros_like(self.conflict)
        found: set[tuple[int, ...]] = set()
        for v in np.argsort(-degree, kind="stable").tolist():
            for u in np.flatnonzero(self.conflict[v] & ~covered[v]).tolist():
                clique, candidates = [v, u], adjacent[v] & adjacent[u]
                while candidates.any():
                    pick = np.flatnonzero(candidates)
                    w = int(pick[np.argmax(degree[pick])])
                    clique.append(w)
                    candidates &= adjacent[w]
                tasks = np.array(sorted(clique))
                covered[np.ix_(tasks, tasks)] = True
                if tasks.size >= 3:
                    found.add(tuple(tasks.tolist()))
        for members in sorted(found):
            self.model.add_no_overlap([self.interval[t] for t in members])
        return len(found)

    def order(self) -> int:
        """An order literal per conflicting pair that no precedence orders."""
        free = np.triu(self.conflict & ~(self.reach | self.reach.T), 1)
        pairs = np.argwhere(free).tolist()
        for a, b in pairs:
            before = self.model.new_bool_var(f"o{a}_{b}")
            self.model.add(self.start[b] >= self.start[a] + int(self.duration[a])).only_enforce_if(before)
            self.model.add(self.start[a] >= self.start[b] + int(self.duration[b])).only_enforce_if(~before)
        return len(pairs)

    def energy(self) -> int:
        """Precedence-energy heads and tails (whole ticks, rounded up)."""
        work = self.demand * self.duration[:, None]
        # ceil(sum over successors / capacity), per task and resource, then the largest resource.
        tails = (-(-(self.reach.astype(np.int64) @ work) // self.capacity)).max(axis=1)
        heads = (-(-(self.reach.T.astype(np.int64) @ work) // self.capacity)).max(axis=1)
        added = 0
        for t in range(self.duration.size):
            if tails[t] > 0:
                self.model.add(self.makespan >= self.start[t] + int(self.duration[t] + tails[t]))
                added += 1
            if heads[t] > 0:
                self.model.add(self.start[t] >= int(heads[t]))
                added += 1
        return added

    def delays(self, budget: float, per_solve: float) -> int:
        """Sub-project lower bounds between task pairs, heads and tails (``budget`` seconds in all)."""
        until = time.perf_counter() + budget
        known: dict[tuple[int, int], int] = {}  # (a, b) -> delay; a = -1 is the project start, b = -1 its end
        for members, a, b in self._sub_projects():
            if time.perf_counter() >= until:
                break
            bound = self._sub_project_bound(members, known, min(per_solve, until - time.perf_counter()))
            if bound is not None and bound > 0:
                known[(a, b)] = bound
        for (a, b), delay in known.items():
            if a < 0:
                self.model.add(self.start[b] >= delay)
            elif b < 0:
                self.model.add(self.makespan >= self.start[a] + int(self.duration[a]) + delay)
            else:
                self.model.add(self.start[b] >= self.start[a] + int(self.duration[a]) + delay)
        return len(known)

    def _sub_projects(self) -> list[tuple[IntArray, int, int]]:
        """``(tasks between a and b, a, b)`` for pairs with parallel branches between them, plus every
        head (``a = -1``) and tail (``b = -1``) of at least two tasks, smallest first."""
        parents, children = adjacency(self.duration.size, self.edges.tolist())
        found: list[tuple[IntArray, int, int]] = []
        for a in range(self.duration.size):
            if len(children[a]) >= 2 and self.reach[a].sum() >= 2:
                found.append((np.flatnonzero(self.reach[a]), a, -1))
            if len(parents[a]) >= 2 and self.reach[:, a].sum() >= 2:
                found.append((np.flatnonzero(self.reach[:, a]), -1, a))
            if len(children[a]) < 2:
                continue
            for b in np.flatnonzero(self.reach[a]).tolist():
                between = np.flatnonzero(self.reach[a] & self.reach[:, b])
                branches_out = sum(bool(self.reach[c, b]) for c in children[a])
                branches_in = sum(bool(self.reach[a, c]) for c in parents[b])
                if between.size >= 2 and branches_out >= 2 and branches_in >= 2:
                    found.append((between, a, b))
        found.sort(key=lambda item: (item[0].size, item[1], item[2]))
        return found

    def _sub_project_bound(self, members: IntArray, known: dict[tuple[int, int], int], seconds: float) -> int | None:
        from ortools.sat.python import cp_model

        model = cp_model.CpModel()
        local = {int(t): k for k, t in enumerate(members)}
        horizon = int(self.duration[members].sum())
        start = [model.new_int_var(0, horizon, "") for _ in members]
        span = model.new_int_var(0, horizon, "M")
        for k, t in enumerate(members.tolist()):
            model.add(span >= start[k] + int(self.duration[t]))
        for (a, b), delay in known.items():
            if a in local and b in local:
                model.add(start[local[b]] >= start[local[a]] + int(self.duration[a]) + delay)
        for a, b in self.edges.tolist():
            if a in local and b in local:
                model.add(start[local[b]] >= start[local[a]] + int(self.duration[a]))
        interval = [model.new_fixed_size_interval_var(start[k], int(self.duration[t]), "")
                    for k, t in enumerate(members.tolist())]  # fmt: skip
        for r in range(self.capacity.size):
            use = [k for k, t in enumerate(members.tolist()) if self.demand[t, r] > 0]
            if sum(int(self.demand[members[k], r]) for k in use) > self.capacity[r]:
                model.add_cumulative([interval[k] for k in use], [int(self.demand[members[k], r]) for k in use],
                                     int(self.capacity[r]))  # fmt: skip
        model.minimize(span)
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        solver.parameters.max_time_in_seconds = max(seconds, 0.01)
        solver.parameters.linearization_level = 0
        status = solver.solve(model)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.UNKNOWN):
            return int(solver.best_objective_bound)
        return None

"""Instances built in code: servers, tenants, a hierarchy and DAG jobs, by name, validated as files are.

Each part is a small frozen dataclass holding what an instance file holds for it (resource amounts as
mappings by resource name, stages by name), checked on construction by the same readers that check a
file (:mod:`fairpack.models.io`), with the same messages; a message names the part at fault by its name
(``jobs[q1].stages[map].demand.cpu: must be finite and non-negative, got -1.0``), where a file's message
gives its position. :meth:`Instance.build <fairpack.models.types.Instance.build>` (here
:func:`build_instance`) puts parts together into a validated :class:`~fairpack.models.types.Instance`,
checking what only the whole can tell (resources, caps against the cluster, blocks and machines).

A part may also be given as a mapping in the file's own form (``{"name": ..., "capacity": {...}}``).

NetworkX in and out: :meth:`Job.from_networkx` reads a DAG (nodes are stages, node attributes their
fields, edges precedence) and :meth:`Job.to_networkx` writes one; :meth:`Node.from_networkx` and
:meth:`Node.to_networkx` do the same for a hierarchy (edges from parent to child, attribute ``weight``,
leaves with ``demand`` and ``tasks``). :meth:`Node.from_parents` reads a ``{child: parent}`` mapping.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fairpack.models import io
from fairpack.models.types import Instance, InstanceError

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["Job", "Node", "Option", "Server", "Stage", "Tenant", "build_instance", "named_field"]

#: A placeholder resource for checking a part that names none (a stage with ``demand: {}``).
_NO_RESOURCE = ("resource",)

_STAGE_FIELDS = ("tasks", "duration", "demand", "after", "input", "options")
_SEGMENT = re.compile(r"([^.\[\]]+)((?:\[\d+\])*)")


# ------------------------------------------------------------------------------------- messages


def named_field(path: str, data: Any) -> str:
    """``path`` (``jobs[3].stages[0].demand.cpu``) with each list position replaced by the name of the entry
    there (``jobs[q1].stages[map].demand.cpu``), walking ``data`` (the file-form mapping the path is in);
    positions of entries without a printable string name stay as they are."""
    if not path:
        return path
    out: list[str] = []
    here: Any = data
    for segment in path.split("."):
        match = _SEGMENT.fullmatch(segment)
        if match is None:  # a key with dots or brackets of its own: leave the rest as it is
            out.append(segment)
            here = None
            continue
        key, positions = match.group(1), re.findall(r"\[(\d+)\]", match.group(2))
        here = here.get(key) if isinstance(here, Mapping) else None
        text = key
        if key == "hierarchy" and not positions and isinstance(here, Mapping):  # a nested tree: its root's name
            text += f"[{_label(here.get('name'), 0)}]" if isinstance(here.get("name"), str) else ""
        for position in positions:
            entry = here[int(position)] if isinstance(here, list | tuple) and int(position) < len(here) else None
            name = entry.get("name") if isinstance(entry, Mapping) else None
            text += f"[{name}]" if isinstance(name, str) and name.strip() and name.isprintable() else f"[{position}]"
            here = entry
        out.append(text)
    return ".".join(out)


def _renamed(error: InstanceError, data: Any, strip: str = "") -> InstanceError:
    """``error`` with its field named by names (see :func:`named_field`); a leading ``strip`` (the
    throw-away context a lone part was checked in) is dropped."""
    located = named_field(error.field.lstrip("."), data)
    if strip and located.startswith(strip):
        located = located[len(strip):].lstrip(".")
    return InstanceError(error.reason, located, error.source)


def _check_part(data: dict[str, Any], check: Callable[[], object], strip: str = "") -> None:
    """Run ``check()`` (a reader of :mod:`io` over ``data``) and re-raise its error naming parts by name."""
    try:
        check()
    except InstanceError as error:
        raise _renamed(error, data, strip) from None


# ---------------------------------------------------------------------------------- plain values


def _plain(value: Any) -> Any:
    """``value`` with mappings as dicts, sequences (not strings) as lists and numpy scalars as Python
    numbers: the form a file's reader sees. Anything else stays, for the reader to refuse by name."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    item = getattr(value, "item", None)
    if callable(item) and type(value).__module__ == "numpy":
        return item()
    return value


def _stage_vectors(stage: Any) -> list[Any]:
    """A file-form stage's ``demand`` and its options' ``demand`` mappings (the resources they name)."""
    if not isinstance(stage, Mapping):
        return []
    options = stage.get("options")
    return [stage.get("demand")] + [o.get("demand") for o in options if isinstance(o, Mapping)] if isinstance(
        options, list | tuple) else [stage.get("demand")]  # fmt: skip


def _resources_of(*vectors: Any) -> tuple[str, ...]:
    """The resource names the vectors mention, in first-mention order (only string keys: the readers name
    anything else)."""
    seen: dict[str, None] = {}
    for vector in vectors:
        if isinstance(vector, Mapping):
            seen.update((key, None) for key in vector if isinstance(key, str))
    return tuple(seen) or _NO_RESOURCE


def _as_dicts(parts: Iterable[Any], kind: str, field_name: str) -> list[Any]:
    """Parts (specs or file-form mappings) in their file form."""
    if isinstance(parts, str | bytes | Mapping) or not isinstance(parts, Iterable):
        raise InstanceError(f"must be a list of {kind}, got {type(parts).__name__}", field_name)
    return [part.to_dict() if hasattr(part, "to_dict") else _plain(part) for part in parts]


# ----------------------------------------------------------------------------------------- parts


@dataclass(frozen=True)
class Server:
    """``count`` identical machines, each with ``capacity`` (resource name -> amount) and ``labels``.

    Examples
    --------
    >>> Server("big", {"cpu": 12, "mem": 2}, count=2, labels={"rack": "r1"}).to_dict()["count"]
    2
    """

    name: str
    capacity: Mapping[str, float]
    count: int = 1
    labels: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        entry = self.to_dict()
        data = {"resources": list(_resources_of(entry.get("capacity"))), "servers": [entry]}
        _check_part(data, lambda: io.instance_from_dict(data))

    def to_dict(self) -> dict[str, Any]:
        """The server in the file's form."""
        entry: dict[str, Any] = {"name": self.name, "capacity": _plain(self.capacity)}
        if not (isinstance(self.count, int) and not isinstance(self.count, bool) and self.count == 1):
            entry["count"] = _plain(self.count)
        if self.labels:
            entry["labels"] = _plain(self.labels)
        return entry


@dataclass(frozen=True)
class Tenant:
    """A flat tenant (user, queue) with one task shape: ``demand`` per task, ``weight``, at most ``tasks``
    tasks (None: unbounded)."""

    name: str
    demand: Mapping[str, float]
    weight: float = 1.0
    tasks: float | None = None

    def __post_init__(self) -> None:
        entry = self.to_dict()
        resources = _resources_of(entry.get("demand"))

        def check() -> None:
            io._entry(entry, "tenants[0]", "tenant")
            io._read_tenants([entry], lambda k: f"tenants[{k}]", resources, io.DEFAULT_LIMITS).build(
                lambda k: f"tenants[{k}]")

        _check_part({"tenants": [entry]}, check)

    def to_dict(self) -> dict[str, Any]:
        """The tenant in the file's form."""
        entry: dict[str, Any] = {"name": self.name, "demand": _plain(self.demand)}
        if self.weight != 1:
            entry["weight"] = _plain(self.weight)
        if self.tasks is not None:
            entry["tasks"] = _plain(self.tasks)
        return entry


@dataclass(frozen=True)
class Node:
    """A node of a weighted hierarchy (H-DRF): inner nodes have ``children``, leaves a ``demand`` per task
    (and optionally a task cap ``tasks``); every node a ``weight`` among its siblings.

    Build one nested (``Node("root", children=[Node("ads", 3, [...]), ...])``), from a ``{child: parent}``
    mapping (:meth:`from_parents`) or from a networkx tree (:meth:`from_networkx`).
    """

    name: str
    weight: float = 1.0
    children: Sequence[Node] = ()
    demand: Mapping[str, float] | None = None
    tasks: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "children", tuple(self.children))
        for position, child in enumerate(self.children):
            if not isinstance(child, Node):
                raise InstanceError(f"must be a Node, got {type(child).__name__}",
                                    f"hierarchy[{_label(self.name, 0)}].children[{position}]")  # fmt: skip
        entry = self.to_dict()
        data = {"hierarchy": entry}
        _check_part(data, lambda: io._read_hierarchy(entry, _resources_of(*_leaf_demands(entry)),
                                                            io.DEFAULT_LIMITS))  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """The subtree in the file's nested form."""
        entry: dict[str, Any] = {"name": self.name}
        if self.weight != 1:
            entry["weight"] = _plain(self.weight)
        if self.demand is not None:
            entry["demand"] = _plain(self.demand)
        if self.tasks is not None:
            entry["tasks"] = _plain(self.tasks)
        if self.children:
            entry["children"] = [child.to_dict() for child in self.children]
        return entry

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any]) -> Node:
        """A tree from the file's nested form (``name``, ``weight``, ``children`` or ``demand``/``tasks``)."""
        io._read_hierarchy(_plain(entry), _resources_of(*_leaf_demands(_plain(entry))), io.DEFAULT_LIMITS)
        return _node_of(_plain(entry))

    @classmethod
    def from_parents(
        cls,
        parents: Mapping[str, str | None],
        weights: Mapping[str, float] | None = None,
        demand: Mapping[str, Mapping[str, float]] | None = None,
        tasks: Mapping[str, float] | None = None,
    ) -> Node:
        """A tree from ``{child: parent}`` links (the root either maps to None or appears only as a parent),
        ``weights`` by node (default 1), ``demand`` per task and task caps ``tasks`` by leaf."""
        if not isinstance(parents, Mapping):
            raise InstanceError(f"must be a mapping of child to parent, got {type(parents).__name__}", "hierarchy")
        names = list(dict.fromkeys([*parents, *(p for p in parents.values() if p is not None)]))
        weights, demand, tasks = weights or {}, demand or {}, tasks or {}
        for what, given in (("weights", weights), ("demand", demand), ("tasks", tasks)):
            unknown = [name for name in given if name not in names]
            if unknown:
                raise InstanceError(f"{what} names node {unknown[0]!r}, which is in no link", "hierarchy")
        flat = []
        for name in names:
            entry: dict[str, Any] = {"name": name}
            if parents.get(name) is not None:
                entry["parent"] = parents[name]
            if name in weights:
                entry["weight"] = _plain(weights[name])
            if name in demand:
                entry["demand"] = _plain(demand[name])
            if name in tasks:
                entry["tasks"] = _plain(tasks[name])
            flat.append(entry)
        return _tree_of_flat(flat)

    @classmethod
    def from_networkx(cls, graph: nx.DiGraph) -> Node:
        """A tree from a networkx DiGraph with edges from parent to child; node attributes ``weight`` (default
        1), and on leaves ``demand`` (resource -> amount per task) and ``tasks`` (a cap)."""
        import networkx as nx

        if not isinstance(graph, nx.DiGraph) or graph.is_multigraph():
            raise InstanceError(f"must be a networkx DiGraph (edges from parent to child), got "
                                f"{type(graph).__name__}", "hierarchy")  # fmt: skip
        flat = []
        for name, attributes in graph.nodes(data=True):
            unknown = sorted(set(attributes) - {"weight", "demand", "tasks"}, key=str)
            if unknown:
                raise InstanceError(f"unknown attribute {unknown[0]!r} (a node has weight, and a leaf demand and "
                                    "tasks)", f"hierarchy[{_label(name, 0)}]")  # fmt: skip
            parents = list(graph.predecessors(name))
            if len(parents) > 1:
                raise InstanceError(f"node has {len(parents)} parents {sorted(map(str, parents))}: a hierarchy is a "
                                    "tree", f"hierarchy[{_label(name, 0)}]")  # fmt: skip
            entry: dict[str, Any] = {"name": name, **_plain(attributes)}
            if parents:
                entry["parent"] = parents[0]
            flat.append(entry)
        return _tree_of_flat(flat)

    def to_networkx(self) -> nx.DiGraph:
        """The tree as a networkx DiGraph, edges from parent to child, attributes ``weight`` (every node),
        ``demand`` and ``tasks`` (leaves, where given)."""
        import networkx as nx

        graph = nx.DiGraph()
        stack: list[tuple[Node, Node | None]] = [(self, None)]
        while stack:
            node, parent = stack.pop()
            attributes: dict[str, Any] = {"weight": node.weight}
            if node.demand is not None:
                attributes["demand"] = dict(node.demand)
            if node.tasks is not None:
                attributes["tasks"] = node.tasks
            graph.add_node(node.name, **attributes)
            if parent is not None:
                graph.add_edge(parent.name, node.name)
            stack.extend((child, node) for child in reversed(node.children))
        return graph

    @classmethod
    def of(cls, instance: Instance) -> Node:
        """The instance's hierarchy as a tree of nodes (a flat instance: a root over its tenants)."""
        data = io.instance_to_dict(instance)
        if "hierarchy" in data:
            return _tree_of_flat(data["hierarchy"])
        leaves = [_node_of(tenant) for tenant in data["tenants"]]
        return Node("root", children=leaves)


def _leaf_demands(entry: Any) -> list[Any]:
    """Every ``demand`` mapping in a nested file-form tree."""
    found, stack = [], [entry]
    while stack:
        here = stack.pop()
        if isinstance(here, Mapping):
            found.append(here.get("demand"))
            children = here.get("children")
            if isinstance(children, list):
                stack.extend(children)
    return found


def _node_of(entry: Mapping[str, Any]) -> Node:
    """A Node from a checked file-form entry (nested ``children``)."""
    children = tuple(_node_of(child) for child in entry.get("children") or ())
    return Node(entry["name"], entry.get("weight", 1.0), children, entry.get("demand"), entry.get("tasks"))


def _tree_of_flat(flat: list[dict[str, Any]]) -> Node:
    """A Node tree from the file's flat form (``parent`` links), checked by the file's reader first."""
    resources = _resources_of(*(entry.get("demand") for entry in flat if isinstance(entry, Mapping)))
    _check_part({"hierarchy": flat}, lambda: io._read_hierarchy(flat, resources, io.DEFAULT_LIMITS))
    children: dict[str, list[dict[str, Any]]] = {}
    root = flat[0]
    for entry in flat:
        if entry.get("parent") is None:
            root = entry
        else:
            children.setdefault(entry["parent"], []).append(entry)

    def nested(entry: dict[str, Any]) -> dict[str, Any]:
        below = [nested(child) for child in children.get(entry["name"], [])]
        out = {key: value for key, value in entry.items() if key != "parent"}
        return {**out, "children": below} if below else out

    return _node_of(nested(root))


@dataclass(frozen=True)
class Option:
    """One way to run a stage's tasks (Tetrisched's soft constraints): on machines whose labels hold ``on``
    (empty: any), for ``duration``; with ``same`` (a label key) all the stage's tasks run as a gang on
    machines sharing that label's value, started together. ``demand`` (resource -> amount per task) is the
    option's own demand: the resources it names replace the stage's amounts, the rest are the stage's."""

    duration: float
    on: Mapping[str, str] = field(default_factory=dict)
    same: str | None = None
    demand: Mapping[str, float] | None = None

    def __post_init__(self) -> None:
        entry = self.to_dict()
        _check_part({"options": [entry]}, lambda: io._read_options(
            {"options": [entry]}, "", io.DEFAULT_LIMITS, _resources_of(entry.get("demand"))))

    def to_dict(self) -> dict[str, Any]:
        """The option in the file's form."""
        entry: dict[str, Any] = {}
        if self.on:
            entry["on"] = _plain(self.on)
        if self.same is not None:
            entry["same"] = self.same
        entry["duration"] = _plain(self.duration)
        if self.demand is not None:
            entry["demand"] = _plain(self.demand)
        return entry


@dataclass(frozen=True)
class Stage:
    """``tasks`` identical tasks of a DAG job, each using ``demand`` for ``duration``, starting once every
    stage named in ``after`` has ended; ``input`` lists the block each task reads (locality); with
    ``options`` (see :class:`Option`) the durations come from the options instead of ``duration``."""

    name: str
    tasks: int = 1
    duration: float | None = None
    demand: Mapping[str, float] = field(default_factory=dict)
    after: Sequence[str] = ()
    input: Sequence[str] = ()
    options: Sequence[Option | Mapping[str, Any]] = ()

    def __post_init__(self) -> None:
        for name in ("after", "input", "options"):
            value = getattr(self, name)
            if isinstance(value, list):
                object.__setattr__(self, name, tuple(value))
        entry = self.to_dict()
        alone = {key: value for key, value in entry.items() if key != "after"}  # its parents are its job's
        data = {"jobs": [{"name": "job", "stages": [alone]}]}
        _check_part(data, lambda: io._read_jobs(data["jobs"], _resources_of(*_stage_vectors(alone)), io.DEFAULT_LIMITS),
                    strip="jobs[job]")

    def to_dict(self) -> dict[str, Any]:
        """The stage in the file's form."""
        entry: dict[str, Any] = {"name": self.name}
        if not (isinstance(self.tasks, int) and not isinstance(self.tasks, bool) and self.tasks == 1):
            entry["tasks"] = _plain(self.tasks)
        if self.duration is not None:
            entry["duration"] = _plain(self.duration)
        entry["demand"] = _plain(self.demand)
        if self.after:
            entry["after"] = _plain(self.after)
        if self.input:
            entry["input"] = _plain(self.input)
        if self.options:
            entry["options"] = [o.to_dict() if isinstance(o, Option) else _plain(o) for o in self.options]
        return entry

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any]) -> Stage:
        """A stage from the file's form."""
        if not isinstance(entry, Mapping):
            raise InstanceError(f"must be a mapping (a stage), got {type(entry).__name__}", "stages")
        return Stage(**_plain(entry))


@dataclass(frozen=True)
class Job:
    """A DAG job: its ``stages`` (see :class:`Stage`; precedence by ``after``), ``weight``, ``release`` time,
    optional ``tenant`` (the queue it belongs to), ``deadline`` and ``utility`` (piecewise-linear
    ``(time, value)`` points, values not increasing).

    Build one from a networkx DAG with :meth:`from_networkx`.
    """

    name: str
    stages: Sequence[Stage | Mapping[str, Any]]
    weight: float = 1.0
    release: float = 0.0
    tenant: str | None = None
    deadline: float | None = None
    utility: Sequence[tuple[float, float]] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.stages, list):
            object.__setattr__(self, "stages", tuple(self.stages))
        entry = self.to_dict()
        stages = entry.get("stages")
        demands = [vector for stage in stages for vector in _stage_vectors(stage)] if isinstance(
            stages, list) else []  # fmt: skip
        data = {"jobs": [entry]}
        _check_part(data, lambda: io._read_jobs(data["jobs"], _resources_of(*demands), io.DEFAULT_LIMITS))

    def to_dict(self) -> dict[str, Any]:
        """The job in the file's form."""
        entry: dict[str, Any] = {"name": self.name}
        if self.weight != 1:
            entry["weight"] = _plain(self.weight)
        if self.release != 0:
            entry["release"] = _plain(self.release)
        if self.tenant is not None:
            entry["tenant"] = self.tenant
        if self.deadline is not None and self.deadline != math.inf:
            entry["deadline"] = _plain(self.deadline)
        if self.utility is not None:
            entry["utility"] = _plain(self.utility)
        stages = self.stages
        entry["stages"] = (
            [s.to_dict() if isinstance(s, Stage) else _plain(s) for s in stages]
            if isinstance(stages, list | tuple) else stages
        )
        return entry

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any]) -> Job:
        """A job from the file's form."""
        plain = _plain(entry)
        if not isinstance(plain, dict):
            raise InstanceError(f"must be a mapping (a job), got {type(entry).__name__}", "jobs")
        return Job(**plain)

    @classmethod
    def of(cls, instance: Instance, job: str | int) -> Job:
        """Job ``job`` (a name or a position) of ``instance``, as a part (``.to_networkx()`` draws it)."""
        names = [j.name for j in instance.jobs]
        position = job if isinstance(job, int) else names.index(job) if job in names else -1
        if not 0 <= position < len(names):
            raise InstanceError(f"no job {job!r} (the instance has {len(names)} jobs)", "jobs")
        return Job.from_dict(io.instance_to_dict(instance)["jobs"][position])

    @classmethod
    def from_networkx(
        cls,
        graph: nx.DiGraph,
        name: str | None = None,
        *,
        weight: float | None = None,
        release: float | None = None,
        tenant: str | None = None,
        deadline: float | None = None,
        utility: Sequence[tuple[float, float]] | None = None,
    ) -> Job:
        """A job from a networkx DAG: nodes are stages (named by the node, which must be a string), node
        attributes their fields (``tasks``, ``duration``, ``demand``, ``options``, ``input``), edges
        precedence (``u -> v``: ``v`` starts after ``u`` ends).

        The job's own fields default to the graph's attributes (``graph.graph["name"]``, ``weight``, ...),
        so ``Job.from_networkx(job.to_networkx())`` gives ``job`` back. A cycle, a missing attribute or an
        attribute of the wrong type is refused naming the node (``jobs[etl].stages[map].duration: ...``).
        """
        import networkx as nx

        given = graph.graph if isinstance(graph, nx.Graph) else {}
        name = given.get("name") if name is None else name
        where = f"jobs[{_label(name, 0)}]"
        if not isinstance(graph, nx.DiGraph) or graph.is_multigraph():
            raise InstanceError(f"must be a networkx DiGraph (edges from a stage to the stages after it), got "
                                f"{type(graph).__name__}", where)  # fmt: skip
        for node in graph.nodes:
            if not isinstance(node, str):
                raise InstanceError(f"stage names are strings, got node {node!r} ({type(node).__name__}); relabel "
                                    "with networkx.relabel_nodes(graph, str)", f"{where}.stages")  # fmt: skip
        try:
            cycle = nx.find_cycle(graph)
        except nx.NetworkXNoCycle:
            cycle = []
        if cycle:
            path = " -> ".join([str(u) for u, _ in cycle] + [str(cycle[0][0])])
            raise InstanceError(f"the stages form a cycle: {path}", f"{where}.stages[{cycle[0][0]}]")
        stages = []
        for node, attributes in graph.nodes(data=True):
            if "after" in attributes or "name" in attributes:
                key = "after" if "after" in attributes else "name"
                raise InstanceError(f"attribute {key!r} is not a stage field here: the node is the stage's name "
                                    "and edges are its precedence", f"{where}.stages[{node}].{key}")  # fmt: skip
            stage = {"name": node, **_plain(attributes)}
            parents = list(graph.predecessors(node))
            if parents:
                stage["after"] = parents
            stages.append(stage)
        fields = {"weight": weight, "release": release, "tenant": tenant, "deadline": deadline, "utility": utility}
        chosen = {key: (given.get(key) if value is None else value) for key, value in fields.items()}
        entry = {"name": name, "stages": stages, **{k: v for k, v in chosen.items() if v is not None}}
        if name is None:
            raise InstanceError("a job needs a name: pass name=... or set graph.graph['name']", "jobs")
        return Job.from_dict(entry)

    def to_networkx(self) -> nx.DiGraph:
        """The job as a networkx DAG: a node per stage with its fields as attributes (``tasks``,
        ``duration`` or ``options``, ``demand``, ``input``), an edge from each parent; the job's fields in
        ``graph.graph`` (``name``, ``weight``, ``release``, and ``tenant``, ``deadline``, ``utility`` if set)."""
        import networkx as nx

        entry = self.to_dict()
        graph = nx.DiGraph(**{key: value for key, value in entry.items() if key != "stages"})
        graph.graph.setdefault("weight", 1.0)
        graph.graph.setdefault("release", 0.0)
        for stage in entry["stages"]:
            attributes = {key: value for key, value in stage.items() if key not in ("name", "after")}
            attributes.setdefault("tasks", 1)
            graph.add_node(stage["name"], **attributes)
        for stage in entry["stages"]:
            graph.add_edges_from((parent, stage["name"]) for parent in stage.get("after", ()))
        return graph


def _label(name: Any, position: int) -> str:
    """How a part is named in messages: its name, or its position if the name is unusable."""
    return name if isinstance(name, str) and name.strip() and name.isprintable() else str(position)


# -------------------------------------------------------------------------------------- instance


def _hierarchy_dict(hierarchy: Any) -> Any:
    """A hierarchy given as a Node, a networkx tree, a ``{child: parent}`` mapping or the file's form."""
    if isinstance(hierarchy, Node):
        return hierarchy.to_dict()
    if type(hierarchy).__module__.startswith("networkx"):
        return Node.from_networkx(hierarchy).to_dict()
    if isinstance(hierarchy, Mapping) and "name" not in hierarchy and all(
            isinstance(v, str | None) for v in hierarchy.values()):  # fmt: skip
        return Node.from_parents(hierarchy).to_dict()
    return _plain(hierarchy)


def build_instance(
    servers: Iterable[Server | Mapping[str, Any]],
    *,
    tenants: Iterable[Tenant | Mapping[str, Any]] = (),
    hierarchy: Node | Mapping[str, Any] | nx.DiGraph | None = None,
    jobs: Iterable[Job | Mapping[str, Any]] = (),
    resources: Sequence[str] | None = None,
    blocks: Mapping[str, Sequence[str]] | None = None,
    locality: Mapping[str, float] | None = None,
    time_slot: float | None = None,
    name: str = "instance",
) -> Instance:
    """A validated :class:`Instance` from its parts (see :meth:`Instance.build`)."""
    data: dict[str, Any] = {"name": name}
    data["servers"] = _as_dicts(servers, "servers", "servers")
    if tenants:
        data["tenants"] = _as_dicts(tenants, "tenants", "tenants")
    if hierarchy is not None:
        data["hierarchy"] = _hierarchy_dict(hierarchy)
    if jobs:
        data["jobs"] = _as_dicts(jobs, "jobs", "jobs")
    if blocks is not None:
        data["blocks"] = _plain(blocks)
    if locality is not None:
        data["locality"] = _plain(locality)
    if time_slot is not None:
        data["time"] = {"slot": _plain(time_slot)}
    if resources is None:
        vectors = [s.get("capacity") for s in data["servers"] if isinstance(s, Mapping)]
        vectors += [t.get("demand") for t in data.get("tenants", []) if isinstance(t, Mapping)]
        hierarchy_data = data.get("hierarchy")
        vectors += (_leaf_demands(hierarchy_data) if isinstance(hierarchy_data, Mapping) else
                    [n.get("demand") for n in hierarchy_data or [] if isinstance(n, Mapping)])  # fmt: skip
        for job in data.get("jobs", []):
            stages = job.get("stages") if isinstance(job, Mapping) else None
            vectors += [vector for s in stages or [] for vector in _stage_vectors(s)]
        resources = _resources_of(*vectors)
    data["resources"] = _plain(list(resources)) if not isinstance(resources, str) else resources
    data = {key: data[key] for key in ("name", "resources", "servers", "tenants", "hierarchy", "jobs", "time",
                                       "blocks", "locality") if key in data}  # fmt: skip
    try:
        return io.instance_from_dict(data, name)
    except InstanceError as error:
        raise _renamed(error, data) from None


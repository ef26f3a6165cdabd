"""fairpack: exact, verified multi-resource fair allocation for shared clusters, and the optimality gaps of
the heuristics and online schedulers real clusters run.

Build an instance in code (or load a file), solve it exactly, compare heuristics against the optimum::

    import networkx as nx
    import fairpack

    g = nx.DiGraph()
    g.add_node("map", tasks=4, duration=3, demand={"cpu": 1, "mem": 2})
    g.add_node("reduce", tasks=1, duration=2, demand={"cpu": 2, "mem": 4})
    g.add_edge("map", "reduce")
    instance = fairpack.Instance.build(
        servers=[fairpack.Server("m", {"cpu": 4, "mem": 8}, count=2)],
        jobs=[fairpack.Job.from_networkx(g, "etl"), fairpack.Job.from_networkx(g, "etl2", release=2)],
    )
    table = fairpack.compare(instance, ["spacetime-cp", "carbyne", "tetris", "sjf"])

Every answer is a :class:`Result`, re-verified from the instance alone by the independent checker
(``fairpack.models.check``); ``Result.to_frame()`` gives its tenants, hierarchy nodes, jobs or tasks as a
pandas DataFrame. ``fairpack.methods()`` lists the exact methods and heuristics of ``solve``;
``fairpack.methods(include_policies=True)`` lists them and every online policy of ``simulate`` (under
``online:<name>``) from the one registry, each record's ``command`` saying which; ``fairpack.policies()``
lists the policies by name.

The package has two parts: :mod:`fairpack.models` (the problem and how to judge an answer; imports no
solver) and :mod:`fairpack.solver` (how answers are found). The names here are imported on first use, so
``import fairpack`` is fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fairpack._lazy import lazy_names
from fairpack._version import __version__

if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names below are imported on first use
    from fairpack.models.build import Job as Job
    from fairpack.models.build import Node as Node
    from fairpack.models.build import Option as Option
    from fairpack.models.build import Server as Server
    from fairpack.models.build import Stage as Stage
    from fairpack.models.build import Tenant as Tenant
    from fairpack.models.io import load_instance as load_instance
    from fairpack.models.result import Allocation as Allocation
    from fairpack.models.result import Result as Result
    from fairpack.models.result import Schedule as Schedule
    from fairpack.models.types import Instance as Instance
    from fairpack.models.types import InstanceError as InstanceError
    from fairpack.models.view import result_json as result_json
    from fairpack.models.yarn import hierarchy_from_yarn as hierarchy_from_yarn
    from fairpack.solver.api import simulate as simulate
    from fairpack.solver.api import solve as solve
    from fairpack.solver.bench.api import sweep as sweep
    from fairpack.solver.bench.compare import compare as compare
    from fairpack.solver.registry import OptionError as OptionError
    from fairpack.solver.registry import SolveOptions as SolveOptions
    from fairpack.solver.registry import get_method as get_method
    from fairpack.solver.registry import get_policy as get_policy
    from fairpack.solver.registry import methods as methods
    from fairpack.solver.registry import policies as policies

#: Public name -> (module, attribute), imported on first access.
_PUBLIC: dict[str, tuple[str, str]] = {
    # solving, simulating, comparing
    "solve": ("fairpack.solver.api", "solve"),
    "simulate": ("fairpack.solver.api", "simulate"),
    "compare": ("fairpack.solver.bench.compare", "compare"),
    "sweep": ("fairpack.solver.bench.api", "sweep"),
    "methods": ("fairpack.solver.registry", "methods"),
    "get_method": ("fairpack.solver.registry", "get_method"),
    "policies": ("fairpack.solver.registry", "policies"),
    "get_policy": ("fairpack.solver.registry", "get_policy"),
    "SolveOptions": ("fairpack.solver.registry", "SolveOptions"),
    "OptionError": ("fairpack.solver.registry", "OptionError"),
    # instances: files, and the parts built in code
    "load_instance": ("fairpack.models.io", "load_instance"),
    "Instance": ("fairpack.models.types", "Instance"),
    "InstanceError": ("fairpack.models.types", "InstanceError"),
    "Server": ("fairpack.models.build", "Server"),
    "Tenant": ("fairpack.models.build", "Tenant"),
    "Node": ("fairpack.models.build", "Node"),
    "Job": ("fairpack.models.build", "Job"),
    "Stage": ("fairpack.models.build", "Stage"),
    "Option": ("fairpack.models.build", "Option"),
    "hierarchy_from_yarn": ("fairpack.models.yarn", "hierarchy_from_yarn"),
    # answers
    "Result": ("fairpack.models.result", "Result"),
    "Allocation": ("fairpack.models.result", "Allocation"),
    "Schedule": ("fairpack.models.result", "Schedule"),
    "result_json": ("fairpack.models.view", "result_json"),
}


__getattr__, __dir__ = lazy_names(__name__, globals(), _PUBLIC, also=("__version__", "models", "solver"))

__all__ = ["__version__", *sorted(_PUBLIC)]

"""YARN scheduler files as hierarchies (fairpack.models.yarn): fair-scheduler.xml and capacity-scheduler.xml.

Trees and weights derived by hand; an H-DRF solve whose node shares are derived by hand; every malformed
file refused naming the element; entity bombs and external entities refused without being expanded; the
command line's --hierarchy / --leaf-demand on the bundled examples.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import fairpack
from fairpack.models.types import InstanceError
from fairpack.models.view import result_json
from fairpack.models.yarn import hierarchy_from_yarn, instance_from_yarn, read_yarn
from fairpack.solver.api import simulate, solve
from fairpack.solver.cli import main

ROOT = Path(__file__).resolve().parents[1]
FAIR = ROOT / "instances" / "yarn_fair_scheduler.xml"
CAPACITY = ROOT / "instances" / "yarn_capacity_scheduler.xml"
CLUSTER = ROOT / "instances" / "yarn" / "cluster.yaml"
DEMAND = ROOT / "instances" / "yarn" / "leaf_demand.yaml"

#: One machine of 16 CPUs: every task below takes 1 CPU and 1 GB, so CPU is every leaf's dominant resource.
SMALL = {"cpu": 16, "mem": 64}
TASK = {"cpu": 1, "mem": 1}

FAIR_TREE = """<?xml version="1.0"?>
<allocations>
  <queue name="root">
    <queue name="ads">
      <weight>3</weight>
      <queue name="prod"><weight>3.0</weight></queue>
      <pool name="dev"/>
    </queue>
    <queue name="etl"><schedulingPolicy>drf</schedulingPolicy></queue>
  </queue>
</allocations>
"""


def capacity_xml(**properties: str) -> str:
    """A capacity-scheduler.xml of ``yarn.scheduler.capacity.<key>`` properties (``__`` in a key is ``-``)."""
    body = "".join(f"  <property><name>yarn.scheduler.capacity.{key.replace('__', '-')}</name><value>{value}</value>"
                   "</property>\n" for key, value in properties.items())  # fmt: skip
    return f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n'


CAPACITY_TREE = dict(root_queues="ads,etl", root_ads_queues="prod,dev", root_ads_capacity="75", root_etl_capacity="25",
                     root_ads_prod_capacity="75", root_ads_dev_capacity="25")  # fmt: skip


def cs(**overrides: str) -> str:
    """The capacity tree above (keys with ``_`` for ``.``, ``__`` for ``-``), with ``overrides``; a value None
    drops the key."""
    merged = {**CAPACITY_TREE, **overrides}
    return capacity_xml(**{key.replace("__", "-").replace("_", "."): value for key, value in merged.items()
                           if value is not None})  # fmt: skip


def shape(node: fairpack.Node) -> Any:
    """(name, weight, children or (demand, tasks)) of a tree, for comparing by value."""
    if node.children:
        return (node.name, node.weight, [shape(child) for child in node.children])
    return (node.name, node.weight, dict(node.demand or {}), node.tasks)


def refused(source: Any, demand: Any = TASK, **kwargs: Any) -> InstanceError:
    with pytest.raises(InstanceError) as caught:
        hierarchy_from_yarn(source, demand, **kwargs)
    return caught.value


# --- valid files: the tree and its weights ---------------------------------------------------------------


def test_fair_scheduler_queues_become_nodes_named_by_path_weighted_by_weight() -> None:
    tree = hierarchy_from_yarn(FAIR_TREE, TASK)
    assert shape(tree) == ("root", 1.0, [
        ("root.ads", 3.0, [("root.ads.prod", 3.0, TASK, None), ("root.ads.dev", 1.0, TASK, None)]),
        ("root.etl", 1.0, TASK, None),
    ])  # fmt: skip
    config = read_yarn(FAIR_TREE)
    assert config.kind == "fair"
    assert [q.path for q in config.leaves] == ["root.ads.prod", "root.ads.dev", "root.etl"]
    assert config.queue("root.etl").policy == "drf"


def test_top_level_queues_are_the_roots_children_with_or_without_an_explicit_root() -> None:
    implicit = FAIR_TREE.replace('  <queue name="root">\n', "").replace("  </queue>\n</allocations>", "</allocations>")
    assert 'name="root"' not in implicit
    assert shape(hierarchy_from_yarn(implicit, TASK)) == shape(hierarchy_from_yarn(FAIR_TREE, TASK))


def test_capacity_scheduler_capacities_become_weights() -> None:
    tree = hierarchy_from_yarn(cs(), TASK)
    assert shape(tree) == ("root", 1.0, [
        ("root.ads", 75.0, [("root.ads.prod", 75.0, TASK, None), ("root.ads.dev", 25.0, TASK, None)]),
        ("root.etl", 25.0, TASK, None),
    ])  # fmt: skip
    assert read_yarn(cs()).kind == "capacity"


def test_capacity_weight_mode_and_hadoops_sum_tolerance() -> None:
    tree = hierarchy_from_yarn(cs(root_ads_capacity="3w", root_etl_capacity="1w"), TASK)
    assert [(child.name, child.weight) for child in tree.children] == [("root.ads", 3.0), ("root.etl", 1.0)]
    thirds = cs(root_ads_prod_capacity="66.67", root_ads_dev_capacity="33.33")  # sums to 100.00
    assert hierarchy_from_yarn(thirds, TASK).children[0].children[0].weight == 66.67


def test_capacity_properties_for_labels_and_globals_are_not_queues() -> None:
    text = cs(**{"maximum-applications": "10000", "root_ads_accessible-node-labels_gpu_capacity": "100",
                 "root_ads_prod_user-limit-factor": "2", "root_etl_state": "RUNNING"})  # fmt: skip
    assert shape(hierarchy_from_yarn(text, TASK)) == shape(hierarchy_from_yarn(cs(), TASK))


def test_the_bundled_examples_read_to_the_same_tree_up_to_weight_scale() -> None:
    fair, capacity = (hierarchy_from_yarn(path, DEMAND) for path in (FAIR, CAPACITY))
    for a, b in zip(fair.to_networkx().nodes(data=True), capacity.to_networkx().nodes(data=True), strict=True):
        assert a[0] == b[0] and a[1].get("demand") == b[1].get("demand")
    weights = {child.name: child.weight for child in fair.children[0].children}
    assert weights == {"root.research.training": 4.0, "root.research.notebooks": 1.0}
    weights = {child.name: child.weight for child in capacity.children[0].children}
    assert weights == {"root.research.training": 80.0, "root.research.notebooks": 20.0}


# --- leaf demands ------------------------------------------------------------------------------------------


def test_demand_by_path_relative_path_name_and_default() -> None:
    demand = {"root.ads.prod": {"cpu": 2, "mem": 1}, "ads.dev": {"demand": {"cpu": 3}, "tasks": 5},
              "*": {"cpu": 1, "mem": 2}}  # fmt: skip
    tree = hierarchy_from_yarn(FAIR_TREE, demand)
    leaves = {leaf.name: (dict(leaf.demand or {}), leaf.tasks) for leaf in _leaves(tree)}
    assert leaves == {"root.ads.prod": ({"cpu": 2, "mem": 1}, None), "root.ads.dev": ({"cpu": 3}, 5),
                      "root.etl": ({"cpu": 1, "mem": 2}, None)}  # fmt: skip
    # A path is more specific than a leaf's own name, which is more specific than '*'.
    tree = hierarchy_from_yarn(FAIR_TREE, {"prod": {"cpu": 5}, "root.ads.prod": {"cpu": 7}, "*": {"cpu": 1}})
    assert {leaf.name: dict(leaf.demand or {}) for leaf in _leaves(tree)}["root.ads.prod"] == {"cpu": 7}


def test_demand_from_a_file_and_later_specs_override_earlier(tmp_path: Path) -> None:
    path = tmp_path / "demand.yaml"
    path.write_text("'*': {cpu: 1, mem: 1}\nprod: {demand: {vcores: 2, memory-mb: 4}, tasks: 3}\n")
    tree = hierarchy_from_yarn(FAIR_TREE, [path, {"etl": {"cpu": 4}}], cluster=SMALL)
    leaves = {leaf.name: (dict(leaf.demand or {}), leaf.tasks) for leaf in _leaves(tree)}
    # vcores and memory-mb map to the cluster's cpu and mem.
    assert leaves == {"root.ads.prod": ({"cpu": 2, "mem": 4}, 3), "root.ads.dev": ({"cpu": 1, "mem": 1}, None),
                      "root.etl": ({"cpu": 4}, None)}  # fmt: skip
    json_path = tmp_path / "demand.json"
    json_path.write_text(json.dumps({"cpu": 1, "mem": 1}))
    assert shape(hierarchy_from_yarn(FAIR_TREE, json_path)) == shape(hierarchy_from_yarn(FAIR_TREE, TASK))


def _leaves(node: fairpack.Node) -> list[fairpack.Node]:
    return [node] if not node.children else [leaf for child in node.children for leaf in _leaves(child)]


# --- maxima as task caps, names mapped ----------------------------------------------------------------------


def _caps(xml: str, demand: Any = TASK, **kwargs: Any) -> dict[str, float | None]:
    return {leaf.name: leaf.tasks for leaf in _leaves(hierarchy_from_yarn(xml, demand, **kwargs))}


def _fair(max_resources: str, extra: str = "") -> str:
    return (f"<allocations><queue name='a'><maxResources>{max_resources}</maxResources></queue>"
            f"<queue name='b'/>{extra}</allocations>")  # fmt: skip


@pytest.mark.parametrize(("max_resources", "expected"), [
    ("10 mb, 4 vcores", 4.0),              # old style: min(10 / 1 mem, 4 / 1 cpu)
    ("4 vcores 3 mb", 3.0),                # either order, spaces between
    ("vcores=10, memory-mb=6", 6.0),       # new style
    ("vcores=10", 10.0),                   # new style: memory not given is unbounded
    ("memory=7.5,vcores=9", 7.0),          # whole tasks only
    ("50%", 8.0),                          # of every resource: 8 of 16 CPUs
    ("25% memory, 50% cpu", 8.0),          # 16 of 64 GB, 8 of 16 CPUs
    ("vcores=25%", 4.0),                   # new-style shares: memory not given is 100%
])  # fmt: skip
def test_a_leafs_max_resources_caps_its_tasks(max_resources: str, expected: float) -> None:
    assert _caps(_fair(max_resources), cluster=SMALL) == {"root.a": expected, "root.b": None}


def test_queue_max_resources_default_caps_leaves_without_their_own_and_the_demand_cap_is_kept() -> None:
    xml = _fair("vcores=8", "<queueMaxResourcesDefault>2 mb, 9 vcores</queueMaxResourcesDefault>")
    assert _caps(xml) == {"root.a": 8.0, "root.b": 2.0}
    assert _caps(xml, {"*": TASK, "a": {"demand": TASK, "tasks": 5}}) == {"root.a": 5.0, "root.b": 2.0}


def test_shares_of_the_cluster_cap_nothing_without_the_cluster_and_a_note_says_so() -> None:
    notes: list[str] = []
    assert _caps(_fair("50%"), notes=notes) == {"root.a": None, "root.b": None}
    assert any("shares of the cluster cap nothing" in note and "root.a" in note for note in notes)


def test_capacity_maximum_capacity_multiplies_down_the_path() -> None:
    # ads may use 80% of the cluster, prod 80% of that: 64% of 16 CPUs = 10.24, so 10 tasks; dev inherits
    # ads' 80% (12.8: 12 tasks); etl's -1 is 100%: no cap.
    xml = cs(root_ads_maximum__capacity="80", root_ads_prod_maximum__capacity="80", root_etl_maximum__capacity="-1")
    assert _caps(xml, cluster=SMALL) == {"root.ads.prod": 10.0, "root.ads.dev": 12.0, "root.etl": None}
    config = read_yarn(xml)
    assert config.queue("root.ads.prod").maximum_capacity == 80 and config.queue("root.etl").maximum_capacity == 100
    # An absolute maximum (6 CPUs) for ads, 80% of it for prod: 4.8, so 4 tasks.
    absolute = cs(root_ads_maximum__capacity="[memory=64,vcores=6]", root_ads_prod_maximum__capacity="80")
    assert _caps(absolute, cluster=SMALL) == {"root.ads.prod": 4.0, "root.ads.dev": 6.0, "root.etl": None}


def test_resource_names_map_to_the_clusters_by_the_documented_rule() -> None:
    xml = _fair("yarn.io/gpu=2, vcores=8")
    demand = {"cpu": 1, "gpu": 1}
    assert _caps(xml, demand, cluster={"cpu": 16, "mem": 64, "gpu": 4})["root.a"] == 2.0  # alias: gpu
    # The YARN name itself when the cluster has it; an explicit mapping first.
    assert _caps(xml, {"vcores": 1, "yarn.io/gpu": 1}, cluster={"vcores": 16, "yarn.io/gpu": 4})["root.a"] == 2.0
    assert _caps(xml, {"cpu": 1, "accel": 1}, cluster={"cpu": 16, "accel": 4},
                 resources={"yarn.io/gpu": "accel"})["root.a"] == 2.0  # fmt: skip
    error = refused(xml, {"cpu": 1}, cluster={"cpu": 16, "mem": 64})
    assert error.field == "queue[root.a].maxResources" and "unknown resource 'yarn.io/gpu'" in error.reason


def test_notes_say_what_is_recorded_but_not_modelled() -> None:
    xml = """<allocations>
      <queue name="a"><minResources>1 mb, 1 vcores</minResources><maxResources>50%</maxResources>
        <queue name="a1"/><queue name="a2"><schedulingPolicy>fifo</schedulingPolicy></queue></queue>
      <queue name="b"><schedulingPolicy>drf</schedulingPolicy></queue></allocations>"""
    notes: list[str] = []
    hierarchy_from_yarn(xml, TASK, notes=notes)
    text = "\n".join(notes)
    assert "minResources recorded, not modelled" in text and "root.a" in text
    assert "<string>: maxResources of inner queues recorded, not modelled (a hierarchy caps leaves only): " \
        "root.a" in notes
    assert "not drf here: root.a, root.a.a1, root.a.a2" in text and "root.b" not in text.split("not drf here")[1]


# --- an H-DRF solve derived by hand -----------------------------------------------------------------------


@pytest.mark.parametrize("xml", [FAIR_TREE, cs()], ids=["fair", "capacity"])
def test_hdrf_on_a_yarn_tree_gives_the_shares_derived_by_hand(xml: str) -> None:
    # Every task is <1 CPU, 1 GB> on one 16-CPU machine: CPU is every leaf's dominant resource and the
    # demand is unbounded, so static H-DRF splits the CPUs by guarantee: ads 3/4 (12 CPUs), etl 1/4 (4);
    # inside ads prod 3/4 of it (9 CPUs, share 9/16) and dev 1/4 (3 CPUs, share 3/16).
    instance = fairpack.Instance.build(servers=[fairpack.Server("m", SMALL)], hierarchy=hierarchy_from_yarn(xml, TASK))
    result = solve(instance, "hdrf")
    assert result.verified
    nodes = result_json(instance, result)["nodes"]
    expected = {"root.ads": (0.75, 12), "root.ads.prod": (9 / 16, 9), "root.ads.dev": (3 / 16, 3),
                "root.etl": (0.25, 4)}
    for name, (share, cpus) in expected.items():
        assert nodes[name]["guarantee"] == pytest.approx(share)
        assert nodes[name]["dominant_share"] == pytest.approx(share)
        assert nodes[name]["allocation"]["cpu"] == pytest.approx(cpus)


def test_the_example_hdrf_keeps_every_guarantee_where_naive_hdrf_starves_notebooks() -> None:
    instance = instance_from_yarn(CLUSTER, FAIR, DEMAND)
    assert instance.name == "yarn_fair_scheduler"
    static = result_json(instance, solve(instance, "hdrf"))["nodes"]
    # Memory binds: with training at share s (16 s GPU tasks of 2 GB), notebooks at s / 4 and etl at s (of
    # 512 GB each), 32768 s + 131072 s + 524288 s = 524288 MB, so s = 16/21.
    s = 16 / 21
    for name, share in {"root.research.training": s, "root.research.notebooks": s / 4, "root.etl": s}.items():
        assert static[name]["dominant_share"] == pytest.approx(share)
        assert static[name]["dominant_share"] >= static[name]["guarantee"]
    naive = simulate(instance, "naive-hdrf", seed=0)
    assert naive.verified
    nodes = result_json(instance, naive)["nodes"]
    assert nodes["root.research.notebooks"]["dominant_share"] == 0  # starved: training holds every GPU
    assert nodes["root.research.training"]["allocation"]["gpu"] == 16


# --- malformed files: each names the element at fault ------------------------------------------------------


MALFORMED_FAIR = [
    ("<allocations><queue name='a'>", "", "not well-formed XML"),
    (b"queues: [a]", "", "not well-formed XML"),
    ("<configurations/>", "configurations", "the root element is <configurations>"),
    ("<allocations/>", "allocations", "defines no queue"),
    ("<allocations><queue><weight>2</weight></queue></allocations>", "allocations.queue[0]", "needs a name"),
    ("<allocations><queue name='a'><queue name=' '/></queue></allocations>", "queue[root.a].queue[0].name",
     "needs a name"),
    ("<allocations><queue name='ads'><weight>abc</weight></queue></allocations>", "queue[root.ads].weight",
     "must be a positive number, got 'abc'"),
    ("<allocations><queue name='ads'><weight>0</weight></queue></allocations>", "queue[root.ads].weight",
     "must be a positive number, got '0'"),
    ("<allocations><queue name='ads'><weight>-2</weight></queue></allocations>", "queue[root.ads].weight",
     "must be a positive number"),
    ("<allocations><queue name='ads'><weight>1e9</weight></queue></allocations>", "queue[root.ads].weight",
     "accepted range"),
    ("<allocations><queue name='ads'><weight>1</weight><weight>2</weight></queue></allocations>",
     "queue[root.ads].weight", "given 2 times"),
    ("<allocations><queue name='a.b'/></allocations>", "allocations.queue[0].name", "has a '.'"),
    ("<allocations><queue name='a'><queue name='root'/></queue></allocations>", "queue[root.a].queue[0].name",
     "cannot be named 'root'"),
    ("<allocations><queue name='a'/><pool name='a'/></allocations>", "queue[root.a]", "defined twice"),
    ("<allocations><queue name='root'/><queue name='root'/></allocations>", "queue[root]", "defined twice"),
    ("<allocations><queue name='a'><maxResources>10 gb</maxResources></queue></allocations>",
     "queue[root.a].maxResources", "cannot read '10 gb'"),
    ("<allocations><queue name='a'><maxResources>10 mb</maxResources></queue></allocations>",
     "queue[root.a].maxResources", "no vcores amount"),
    ("<allocations><queue name='a'><minResources>-1 mb, 2 vcores</minResources></queue></allocations>",
     "queue[root.a].minResources", "non-negative"),
    ("<allocations><queue name='a'><maxResources>vcores=1,vcores=2</maxResources></queue></allocations>",
     "queue[root.a].maxResources", "given twice"),
    ("<allocations><queue name='a'><maxResources>vcores=50%,memory-mb=3</maxResources></queue></allocations>",
     "queue[root.a].maxResources", "as a percentage or none"),
    ("<allocations><queue name='a'><maxResources>yarn.io/fpga=1</maxResources></queue></allocations>",
     "queue[root.a].maxResources", "unknown resource 'yarn.io/fpga'"),
    ("<allocations><queue name='a'/><queueMaxResourcesDefault>x</queueMaxResourcesDefault></allocations>",
     "allocations.queueMaxResourcesDefault", "cannot read 'x'"),
    ("<allocations><queue name='a'><schedulingPolicy> </schedulingPolicy></queue></allocations>",
     "queue[root.a].schedulingPolicy", "empty scheduling policy"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "field", "reason"), MALFORMED_FAIR, ids=[m[2] for m in MALFORMED_FAIR])
def test_a_malformed_fair_scheduler_file_names_the_element(text: str | bytes, field: str, reason: str) -> None:
    error = refused(text)
    assert error.field == field and reason in error.reason, str(error)
    assert error.source == "<string>"


MALFORMED_CAPACITY = [
    (dict(root_etl_capacity="15"), "property[yarn.scheduler.capacity.root.queues]",
     "sum to 90 (ads 75 + etl 15), not 100"),
    (dict(root_ads_capacity="abc"), "property[yarn.scheduler.capacity.root.ads.capacity]",
     "must be a positive percentage (or a weight like 2w), got 'abc'"),
    (dict(root_ads_capacity="0", root_etl_capacity="100"), "property[yarn.scheduler.capacity.root.ads.capacity]",
     "must be a positive percentage, got '0'"),
    (dict(root_ads_capacity="175", root_etl_capacity="-75"), "property[yarn.scheduler.capacity.root.ads.capacity]",
     "at most 100"),
    (dict(root_ads_dev_capacity=None), "property[yarn.scheduler.capacity.root.ads.dev.capacity]",
     "required property missing"),
    (dict(root_web_capacity="5"), "property[yarn.scheduler.capacity.root.web.capacity]",
     "unknown queue root.web: yarn.scheduler.capacity.root.queues does not list 'web'"),
    (dict(root_web_queues="w1"), "property[yarn.scheduler.capacity.root.web.queues]",
     "unknown queue root.web: no .queues list names it"),
    (dict(root_ads_queues="prod,dev,prod"), "property[yarn.scheduler.capacity.root.ads.queues]", "listed twice"),
    (dict(root_ads_queues="prod,root"), "property[yarn.scheduler.capacity.root.ads.queues]", "cannot be named 'root'"),
    (dict(root_ads_queues="prod,dev.x"), "property[yarn.scheduler.capacity.root.ads.queues]", "has a '.'"),
    (dict(root_ads_queues=" , "), "property[yarn.scheduler.capacity.root.ads.queues]", "lists no queue"),
    (dict(root_queues=None), "property[yarn.scheduler.capacity.root.queues]", "required property missing"),
    (dict(root_ads_capacity="3w"), "property[yarn.scheduler.capacity.root.queues]",
     "mix percentages (root.etl) and weights (root.ads)"),
    (dict(root_ads_capacity="[memory=1024,vcores=2]"), "property[yarn.scheduler.capacity.root.ads.capacity]",
     "absolute capacities"),
    (dict(root_ads_prod_maximum__capacity="50"), "property[yarn.scheduler.capacity.root.ads.prod.maximum-capacity]",
     "maximum capacity 50 is below the queue's capacity 75"),
    (dict(root_ads_maximum__capacity="101"), "property[yarn.scheduler.capacity.root.ads.maximum-capacity]",
     "percentage in (0, 100]"),
]  # fmt: skip


@pytest.mark.parametrize(("overrides", "field", "reason"), MALFORMED_CAPACITY, ids=[m[2] for m in MALFORMED_CAPACITY])
def test_a_malformed_capacity_scheduler_file_names_the_property(overrides: dict[str, Any], field: str,
                                                                 reason: str) -> None:  # fmt: skip
    error = refused(cs(**overrides))
    assert error.field == field and reason in error.reason, str(error)


@pytest.mark.parametrize(("text", "field", "reason"), [
    ("<configuration><property><value>1</value></property></configuration>", "configuration.property[0]",
     "needs a <name>"),
    ("<configuration><property><name>fs.defaultFS</name><value>x</value></property></configuration>",
     "configuration", "not a capacity-scheduler.xml"),
    (capacity_xml(**{"root.queues": "a"}).replace("</configuration>", "<property><name>yarn.scheduler.capacity."
     "root.queues</name><value>b</value></property></configuration>"), "property[yarn.scheduler.capacity.root.queues]",
     "given twice"),
    ('<configuration xmlns:xi="http://www.w3.org/2001/XInclude"><xi:include href="other.xml"/></configuration>',
     "configuration.include[0]", "XInclude is not followed"),
])  # fmt: skip
def test_a_malformed_hadoop_configuration_names_the_element(text: str, field: str, reason: str) -> None:
    error = refused(text)
    assert error.field == field and reason in error.reason, str(error)


@pytest.mark.parametrize(("demand", "field", "reason"), [
    ({"prod": TASK, "etl": TASK}, "queue[root.ads.dev]", "no demand for leaf queue root.ads.dev"),
    ({"*": TASK, "web": TASK}, "demand[web]", "no queue 'web'"),
    ({"*": TASK, "ads": TASK}, "demand[ads]", "queue root.ads is not a leaf"),
    ({"*": TASK, "root.ads.prod": TASK, "ads.prod": TASK}, "demand[ads.prod]", "given a demand twice"),
    ({"*": {"cpu": "one"}}, "demand[*].cpu", "must be a number, got the string 'one'"),
    ({"*": {"cpu": -1}}, "demand[*].cpu", "non-negative"),
    ({"*": {"demand": TASK, "tasks": "many"}}, "demand[*].tasks", "must be a number of tasks"),
    ({"*": {"tasks": 3}}, "demand[*].demand", "needs a demand"),
    ({"*": {"demand": TASK, "weight": 2}}, "demand[*].weight", "unknown key 'weight'"),
    ({}, "demand", "non-empty mapping"),
    ({"*": {"cpu": 1, "vcores": 1}}, "demand[*]", "two of its resources map to 'cpu'"),
])  # fmt: skip
def test_a_bad_leaf_demand_names_the_entry(demand: Any, field: str, reason: str) -> None:
    error = refused(FAIR_TREE, demand, cluster=SMALL)
    assert error.field == field and reason in error.reason, str(error)


def test_a_name_two_queues_share_must_be_given_as_a_path() -> None:
    xml = ("<allocations><queue name='a'><queue name='x'/></queue>"
           "<queue name='b'><queue name='x'/></queue></allocations>")
    error = refused(xml, {"x": TASK})
    assert "'x' names 2 queues (root.a.x, root.b.x): give the path" in error.reason
    assert len(_leaves(hierarchy_from_yarn(xml, {"a.x": TASK, "root.b.x": TASK}))) == 2


def test_a_bad_demand_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "demand.yaml"
    path.write_text("prod: {cpu: 1}\nads: {cpu: 1}\n")
    error = refused(FAIR_TREE, path)
    assert (error.source, error.field) == (str(path), "queue[ads]") and "not a leaf" in error.reason
    path.write_text("prod: [1, 2]\n")
    assert "must be a resource mapping" in refused(FAIR_TREE, path).reason
    assert "cannot read file" in str(refused(FAIR_TREE, tmp_path / "missing.yaml"))


# --- hostile XML: DTDs, entity bombs, external entities -----------------------------------------------------


BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<allocations><queue name="&lol9;"/></allocations>
"""


def external_entity(secret: Path) -> str:
    return (f'<?xml version="1.0"?>\n<!DOCTYPE allocations [<!ENTITY leak SYSTEM "file://{secret}">]>\n'
            '<allocations><queue name="&leak;"/></allocations>\n')  # fmt: skip


def test_an_entity_bomb_is_refused_at_its_doctype_without_expanding() -> None:
    # Expanded, the queue name would be 10^9 "lol"s (3 GB): refused at the DOCTYPE, nothing is expanded.
    error = refused(BILLION_LAUGHS)
    assert error.field == "<!DOCTYPE>" and "document type declaration (<!DOCTYPE lolz>)" in error.reason
    assert "lollol" not in str(error)


def test_an_external_entity_is_refused_and_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    for text in (external_entity(secret), f'<!DOCTYPE allocations SYSTEM "file://{secret}"><allocations/>'):
        error = refused(text)
        assert error.field == "<!DOCTYPE>" and "TOPSECRET" not in str(error)
    # An entity without a DTD is undefined: plain malformed XML.
    assert "undefined entity" in refused("<allocations><queue name='&leak;'/></allocations>").reason


# --- the command line ------------------------------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def yarn_args(xml: Path, demand: Path | str = DEMAND) -> list[str | Path]:
    return [CLUSTER, "--hierarchy", xml, "--leaf-demand", demand]


@pytest.mark.parametrize("xml", [FAIR, CAPACITY], ids=["fair", "capacity"])
def test_cli_solves_the_examples_with_hdrf_and_every_guarantee_holds(capsys: pytest.CaptureFixture[str],
                                                                     xml: Path) -> None:  # fmt: skip
    code, out, _ = run(capsys, "solve", *yarn_args(xml), "--method", "hdrf", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["verified"] and data["instance"] == xml.stem
    nodes = data["nodes"]
    assert set(nodes) == {"root", "root.research", "root.research.training", "root.research.notebooks", "root.etl"}
    assert nodes["root.research.notebooks"]["guarantee"] == pytest.approx(0.1)
    assert nodes["root.research.notebooks"]["dominant_share"] == pytest.approx(4 / 21)
    assert all(node["dominant_share"] >= node["guarantee"] - 1e-9 for node in nodes.values())


def test_cli_simulate_naive_hdrf_shows_the_starved_queue(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    saved = tmp_path / "naive.json"
    code, out, err = run(capsys, "simulate", *yarn_args(FAIR), "--policy", "naive-hdrf", "-o", saved)
    assert code == 0
    assert "STARVED: root.research.notebooks" in out
    assert "|  `- root.research.notebooks  1       0.1000     0.0000" in out
    assert "fairpack: note: yarn_fair_scheduler.xml: minResources recorded, not modelled" in err
    # The saved result re-verifies against the same cluster, tree and demands.
    code, out, _ = run(capsys, "check", *yarn_args(FAIR), saved)
    assert code == 0 and "verified" in out
    code, out, _ = run(capsys, "validate", *yarn_args(CAPACITY))
    assert code == 0 and "3 tenants" in out and "hierarchy of 5 nodes" in out


def test_cli_leaf_demand_inline_for_every_leaf_and_by_queue(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "solve", CLUSTER, "--hierarchy", FAIR, "--leaf-demand", "vcores=1,memory-mb=1024",
                       "--leaf-demand", "training:gpu=1,cpu=1,tasks=3", "--method", "hdrf", "--json")  # fmt: skip
    assert code == 0
    nodes = json.loads(out)["nodes"]
    assert nodes["root.research.training"]["allocation"] == {"cpu": 3, "mem": 0, "gpu": 3}
    assert nodes["root.etl"]["allocation"]["mem"] == pytest.approx(64 * 1024)


@pytest.mark.parametrize(("xml", "message"), [
    ("<allocations><queue name='ads'><weight>abc</weight></queue></allocations>",
     "queue[root.ads].weight: must be a positive number, got 'abc'"),
    (BILLION_LAUGHS, "<!DOCTYPE>: has a document type declaration"),
    (capacity_xml(**{"root.queues": "a,b", "root.a.capacity": "60", "root.b.capacity": "60"}),
     "property[yarn.scheduler.capacity.root.queues]: the capacities of the children of root sum to 120"),
    ("not xml at all", "not well-formed XML"),
])  # fmt: skip
def test_cli_exits_2_naming_the_file_and_element(capsys: pytest.CaptureFixture[str], tmp_path: Path, xml: str,
                                                 message: str) -> None:  # fmt: skip
    path = tmp_path / "scheduler.xml"
    path.write_text(xml)
    for command in (["solve", "--method", "hdrf"], ["simulate", "--policy", "naive-hdrf"]):
        code, out, err = run(capsys, *command, *yarn_args(path, "cpu=1"))
        assert code == 2 and out == ""
        assert err.startswith(f"fairpack: {path}: ") and message in err, err
        assert "Traceback" not in err


@pytest.mark.parametrize(("args", "message"), [
    (["--hierarchy", FAIR], "--hierarchy needs --leaf-demand"),
    (["--leaf-demand", "cpu=1"], "leaf-demand: needs --hierarchy"),
    (["--hierarchy", FAIR, "--leaf-demand", "cpu=x"], "fairpack: --leaf-demand: demand[*].cpu: must be a number"),
    (["--hierarchy", FAIR, "--leaf-demand", "web:cpu=1"], "fairpack: --leaf-demand: demand[web]: no queue 'web'"),
    (["--hierarchy", FAIR, "--leaf-demand", "cpu=1,fpga=2"], "unknown resource 'fpga'"),
    (["--hierarchy", FAIR, "--leaf-demand", "cpu=1", "--yarn-resource", "vcores"], "expected YARN=NAME"),
    (["--hierarchy", FAIR, "--leaf-demand", "cpu=1", "--yarn-resource", "yarn.io/gpu=fpga"],
     "resources[yarn.io/gpu]: maps 'yarn.io/gpu' to 'fpga', which is not a resource"),
    (["--hierarchy", "missing.xml", "--leaf-demand", "cpu=1"], "fairpack: missing.xml: cannot read file"),
])  # fmt: skip
def test_cli_refuses_bad_yarn_options_with_exit_2(capsys: pytest.CaptureFixture[str], args: list[str],
                                                 message: str) -> None:  # fmt: skip
    code, out, err = run(capsys, "solve", CLUSTER, "--method", "hdrf", *args)
    assert code == 2 and out == "" and message in err and "Traceback" not in err, err

"""Seeded instance generators, including clusters built from the real data in ``--data-dir``.

* :mod:`fairpack.models.generators.clusters` -- Google 2011 machine table, Alibaba GPU cluster, random clusters
  and flat tenants;
* :mod:`fairpack.models.generators.trees` -- random weighted organisation trees;
* :mod:`fairpack.models.generators.jobs` -- random DAG-job mixes and Spark TPC-H query DAGs;
* :mod:`fairpack.models.generators.families` -- the named, parameterised families (``FAMILIES``) that
  ``fairpack generate`` and ``fairpack bench`` sweeps draw instances from.
"""

from fairpack.models.generators.clusters import (
    ALIBABA_NODES,
    ALIBABA_PODS,
    GOOGLE_TABLE,
    alibaba_instance,
    alibaba_servers,
    google_instance,
    google_like_servers,
    google_servers,
    perturbed_distinct,
    random_small,
    random_tenants,
)
from fairpack.models.generators.jobs import TPCH_DIR, TPCH_MEMORY_CHOICES, random_dag_jobs, tpch_jobs
from fairpack.models.generators.trees import random_tree_instance

__all__ = [
    "ALIBABA_NODES",
    "ALIBABA_PODS",
    "GOOGLE_TABLE",
    "TPCH_DIR",
    "TPCH_MEMORY_CHOICES",
    "alibaba_instance",
    "alibaba_servers",
    "google_instance",
    "google_like_servers",
    "google_servers",
    "perturbed_distinct",
    "random_dag_jobs",
    "random_small",
    "random_tenants",
    "random_tree_instance",
    "tpch_jobs",
]

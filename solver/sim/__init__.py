"""The one discrete-event cluster simulator and the online policies that run on it.

* :mod:`fairpack.solver.sim.workload` -- task groups (stages of jobs, tenants' backlogs) as arrays;
* :mod:`fairpack.solver.sim.cluster` -- every machine's free room and the placement rules;
* :mod:`fairpack.solver.sim.engine` -- the event loop, the Policy protocol, recording;
* :mod:`fairpack.solver.sim.policies` -- the policies (DAG jobs, flat tenants, hierarchies, ...);
* :mod:`fairpack.solver.sim.fairshare` -- the fair completion times T_k (the drf-strict schedule).
"""

"""The one discrete-event cluster simulator and the online policies that run on it.

* :mod:`solver.sim.workload` -- task groups (stages of jobs, tenants' backlogs) as arrays;
* :mod:`solver.sim.cluster` -- every machine's free room and the placement rules;
* :mod:`solver.sim.engine` -- the event loop, the Policy protocol, recording;
* :mod:`solver.sim.policies` -- the policies (DAG jobs, flat tenants, hierarchies, ...);
* :mod:`solver.sim.fairshare` -- the fair completion times T_k (the drf-strict schedule).
"""

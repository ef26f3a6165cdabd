"""The one discrete-event cluster simulator and the online policies that run on it.

* :mod:`fairpack.solver.sim.workload` -- task groups (stages of jobs, tenants' backlogs) as arrays;
* :mod:`fairpack.solver.sim.cluster` -- every machine's free room and the placement rules;
* :mod:`fairpack.solver.sim.engine` -- the event loop, the Policy protocol, recording;
* :mod:`fairpack.solver.sim.policies` -- the policies (DAG jobs, flat tenants, hierarchies, ...);
* :mod:`fairpack.solver.sim.register` -- every policy's registry record: its factory and what it can run;
* :mod:`fairpack.solver.sim.build` -- every policy built by its record's factory, every refusal from its record;
* :mod:`fairpack.solver.sim.fairshare` -- the fair completion times T_k (the drf-strict schedule).
"""

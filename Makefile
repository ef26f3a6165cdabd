# Two entry points on a fresh machine: `make demo` and `make test`. Each creates .venv as needed.
# `make docs` builds the user guide (docs/, mkdocs.yml) into site/.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test docs bench figures clean

# setup.py builds the C extensions in place: a changed .pyx installs again.
$(STAMP): pyproject.toml setup.py solver/sim/_fifo_loop.pyx solver/drfh/_ratio_search.pyx
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	# spacetime-cp's genetic algorithm runs inside short time limits (PSPLIB at 10 s): compile it now, once,
	# so a fresh checkout's first solve does not spend its limit in numba's compiler.
	$(BIN)/python -c "from fairpack.solver.spacetime.rcpsp_ga import warm_up; warm_up()"
	# The FIFO policy's compiled event loop (large FIFO simulations) in numba, where the C extension was not built.
	$(BIN)/python -c "from fairpack.solver.sim.compiled_loop import warm_up; warm_up()"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/fairpack solve instances/drfh_fig1.yaml --method drfh
	$(BIN)/fairpack solve instances/drfh_fig1.yaml --method per-server-drf
	$(BIN)/fairpack solve instances/weighted_caps.yaml --method drfh-int
	$(BIN)/fairpack solve instances/hdrf_fig4.yaml --method hdrf
	$(BIN)/fairpack solve instances/dag_two_jobs.yaml --method spacetime-cp --objective avg-jct

# The tests run on two workers (pytest-xdist; TEST_WORKERS=0 runs them in this process, one after another).
# --dist worksteal gives each worker half the tests in order (a module's tests stay together, so its fixtures
# are built about once) and lets an idle worker take over the other's queue. Tests marked slow (long checks
# also covered by a fast test) are left to `pytest -m slow`.
TEST_WORKERS ?= 2

test: $(STAMP)
	$(BIN)/ruff check fairpack models solver tests benchmarks docs
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist worksteal -m "not slow"
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The pages generated from the code (docs/cli.md, docs/methods.md, README's table of methods) are rewritten
# first; then the site, strict: a broken link, a missing page or an unknown API reference fails the build.
docs: $(STAMP)
	$(BIN)/python docs/gen.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

DATA_DIR ?= ../shared/data

bench: $(STAMP)
	$(BIN)/python -m benchmarks.drfh_google --data-dir $(DATA_DIR)
	$(BIN)/python -m benchmarks.heuristic_quality --data-dir $(DATA_DIR)
	$(BIN)/python -m benchmarks.drfh_int_scale --data-dir $(DATA_DIR)
	$(BIN)/python -m benchmarks.hdrf_scale --max-leaves 30000 --huge 100000
	$(BIN)/python -m benchmarks.dag_carbyne --data-dir $(DATA_DIR)
	$(BIN)/python -m benchmarks.psplib_sets --data-dir $(DATA_DIR)

# The benchmark figures and tables of benchmarks/README.md: two sweeps (resumable: an interrupted run continues),
# their reports, and the four figures spliced between its figures markers; then the online reproductions of the
# papers' headline results (cached per section), spliced between the online markers; then delay scheduling (its
# numbers cached, its yardstick sweep resumable), between the locality markers; then Tetrisched's curves (cached
# by set-up), between the tetrisched markers.
BENCH_README := benchmarks/README.md

figures: $(STAMP)
	$(BIN)/fairpack bench run benchmarks/sweeps/readme.toml --out benchmarks/results/readme.parquet --data-dir $(DATA_DIR)
	$(BIN)/fairpack bench report benchmarks/results/readme.parquet --out benchmarks/results/readme_report
	$(BIN)/fairpack bench run benchmarks/sweeps/tpch_triangle.toml --out benchmarks/results/tpch_triangle.parquet --data-dir $(DATA_DIR)
	$(BIN)/fairpack bench report benchmarks/results/tpch_triangle.parquet --out benchmarks/results/tpch_triangle_report
	$(BIN)/fairpack bench figures benchmarks/results/readme.parquet benchmarks/results/tpch_triangle.parquet \
		--out benchmarks/results/figures --readme $(BENCH_README)
	$(BIN)/python -m benchmarks.online_reproductions --data-dir $(DATA_DIR) --readme $(BENCH_README)
	$(BIN)/python -m benchmarks.delay_scheduling --cached --readme $(BENCH_README)
	$(BIN)/python -m benchmarks.tetrisched --readme $(BENCH_README)

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .mypy_cache .ruff_cache site

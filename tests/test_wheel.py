"""fairpack as a user gets it: the wheel, installed into a fresh virtual environment outside the repository,
used from a folder that holds its own ``models.py``, ``models/``, ``solver.py`` and ``solver/``.

The fresh environment gets the wheel alone (``--no-deps``); its dependencies come from the test's own
environment through a path file, which adds that folder to ``sys.path`` without running its path files, so
the editable install of the repository stays invisible and everything fairpack is imported from the wheel.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: What the build does not read: version control, environments, caches, earlier builds, benchmark results.
NOT_SOURCES = {".git", ".venv", "venv", "build", "dist", "__pycache__", ".hypothesis", ".mypy_cache", ".ruff_cache",
               ".pytest_cache", ".grimp_cache", ".import_linter_cache", "results"}  # fmt: skip


def _not_sources(folder: str, names: list[str]) -> set[str]:
    # The editable install's in-place build of the C extension is not a source either: the wheel builds its own.
    return {name for name in names if name in NOT_SOURCES or name.endswith((".egg-info", ".so", ".pyd"))
            or name in ("_fifo_loop.c", "_ratio_search.c")}  # fmt: skip


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Built from a copy of the sources (links kept): building in the repository writes build/ and
    # fairpack.egg-info/ there, which two test processes (pytest-xdist workers) building at once would share.
    source = tmp_path_factory.mktemp("source") / "fairpack"
    shutil.copytree(ROOT, source, symlinks=True, ignore=_not_sources)
    out = tmp_path_factory.mktemp("dist")
    build = tmp_path_factory.mktemp("build")
    command = [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(source)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=build, check=False, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    # setuptools says when a configuration it reads is deprecated: none may be left.
    assert "deprecat" not in (done.stdout + done.stderr).lower(), done.stderr[-3000:]
    (path,) = out.glob("fairpack-*.whl")
    return path


@pytest.fixture(scope="module")
def user(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the fresh environment's python, a user's project folder that shadows every generic name)."""
    env = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=False).create(env)
    python = env / "bin" / "python"
    # The wheel first, into an environment that sees nothing else (pip would otherwise see the test
    # environment's editable install through the path file and replace it); then the dependencies' path.
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", "--no-compile"]
    subprocess.run([*install, str(wheel)], check=True, capture_output=True, timeout=600)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True, timeout=120).stdout.strip())  # fmt: skip
    (site / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    project = tmp_path_factory.mktemp("project")
    (project / "models.py").write_text("raise ImportError('the user project models.py was imported')\n")
    (project / "solver.py").write_text("raise ImportError('the user project solver.py was imported')\n")
    for package in ("models", "solver"):  # a folder wins over a module of the same name: both kinds are here
        (project / "pkg" / package).mkdir(parents=True)
        (project / "pkg" / package / "__init__.py").write_text(f"raise ImportError('user {package}/ imported')\n")
    return python, project


def _run(python: Path, cwd: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(python.parent), "HOME": str(cwd)}
    if path is not None:
        env["PYTHONPATH"] = path
    return subprocess.run([str(python), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300,
                          check=False)  # fmt: skip


def test_the_wheel_installs_one_name_with_its_data(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/", 1)[0] for name in names if not name.startswith("fairpack-")}
    assert tops == {"fairpack"}
    assert "fairpack/py.typed" in names
    assert "fairpack/instances/hdrf_fig10.yaml" in names and "fairpack/sweeps/smoke.toml" in names
    assert "fairpack/models/check/__init__.py" in names and "fairpack/solver/cli/main.py" in names
    # The FIFO loop's C extension is built into the wheel (setup.py), so a user's simulator starts without numba.
    assert any(name.startswith("fairpack/solver/sim/_fifo_loop.") and name.endswith((".so", ".pyd")) for name in names)
    # So is Best-Fit's two-resource search (solver/drfh/_ratio_search.pyx).
    assert any(name.startswith("fairpack/solver/drfh/_ratio_search.") and name.endswith((".so", ".pyd"))
               for name in names)  # fmt: skip


@pytest.mark.parametrize("shadow", ["modules", "packages"])
def test_import_fairpack_from_a_folder_with_its_own_models_and_solver(user: tuple[Path, Path], shadow: str) -> None:
    python, project = user
    code = (
        "import fairpack, sys\n"
        "assert fairpack.__file__.startswith(sys.prefix), (fairpack.__file__, sys.prefix)\n"
        "instance = fairpack.load_instance(fairpack.__path__[0] + '/instances/drfh_fig1.yaml')\n"
        "result = fairpack.solve(instance, 'drfh')\n"
        "assert result.verified and abs(result.objective - 5 / 7) < 1e-9, result\n"
        "assert 'compare' in dir(fairpack) and 'Job' in fairpack.__all__\n"
        "try:\n"
        "    import models\n"
        "except ImportError as error:\n"
        "    print('user:', error)\n"
    )
    done = _run(python, project, "-c", code, path=str(project / "pkg") if shadow == "packages" else None)
    assert done.returncode == 0, done.stderr
    assert "user" in done.stdout  # the name models is the user's, and fairpack did not need it


def test_the_cli_from_the_wheel(user: tuple[Path, Path]) -> None:
    python, project = user
    fairpack = str(python.parent / "fairpack")
    generated = subprocess.run([fairpack, "generate", "hdrf-fig10"], capture_output=True, text=True, cwd=project,
                               env={"PATH": str(python.parent)}, check=False, timeout=300)  # fmt: skip
    assert generated.returncode == 0, generated.stderr
    (project / "fig10.yaml").write_text(generated.stdout)
    solved = subprocess.run([fairpack, "solve", "fig10.yaml", "--method", "hdrf", "--json"], capture_output=True,
                            text=True, cwd=project, env={"PATH": str(python.parent)}, check=False,
                            timeout=300)  # fmt: skip
    assert solved.returncode == 0, solved.stderr
    assert '"verified": true' in solved.stdout
    module = _run(python, project, "-m", "fairpack", "--version")
    assert module.returncode == 0 and module.stdout.startswith("fairpack "), module.stderr


def test_a_bundled_sweep_by_name_from_the_wheel(user: tuple[Path, Path]) -> None:
    python, project = user
    code = (
        "from fairpack.solver.bench.sweep import load_sweep\n"
        "sweep = load_sweep('smoke')\n"
        "tasks, _ = sweep.tasks()\n"
        "assert tasks and 'site-packages' in sweep.source, sweep.source\n"
        "print(len(tasks))\n"
    )
    done = _run(python, project, "-c", code)
    assert done.returncode == 0, done.stderr


def test_the_wheels_fifo_loop_runs_in_c_without_importing_numba(user: tuple[Path, Path]) -> None:
    python, project = user
    code = (
        "import sys\n"
        "import numpy as np\n"
        "from fairpack.models.types import Instance, Job, ServerClass, Stage\n"
        "from fairpack.solver.api import simulate\n"
        "from fairpack.solver.sim import compiled_loop, run\n"
        "run.COMPILED_MIN_TASKS = 1\n"  # the compiled loop even for this small workload
        "jobs = tuple(Job(f'j{k}', (Stage('s', 3, 1.0, np.array([1.0])),), 1.0, k / 2) for k in range(6))\n"
        "result = simulate(Instance(('cpu',), (ServerClass('m', np.array([2.0]), 2),), jobs=jobs), 'fifo')\n"
        "assert result.verified and 'site-packages' in compiled_loop.__file__\n"
        "assert compiled_loop.kernel().__module__ == 'fairpack.solver.sim._fifo_loop'\n"
        "from fairpack.models.generators import google_instance\n"  # Best-Fit's compiled search, in C as well
        "from fairpack.solver.drfh.heuristics import best_fit\n"
        "assert best_fit(google_instance(None, tenants=20, seed=1, machines=500), compiled=True).tasks.sum() > 0\n"
        "assert 'fairpack.solver.drfh._ratio_search' in sys.modules\n"
        "print('numba' in sys.modules)\n"
    )
    done = _run(python, project, "-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"

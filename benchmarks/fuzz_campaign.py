"""A long fuzz campaign: mutated instance files through the loader and through the CLI, counted.

Inputs come from the engine the fuzz test uses (``tests/fuzzing.py``): mutations of the bundled instances
and of PSPLIB files (the data folder's j30 files when present). Input ``i`` is drawn from
``random.Random(f"{seed}-{i}")``, so any input can be made again from its number.

1. Loader: every input through ``models.io.load_instance`` in this process. Counted: valid, clean
   ``InstanceError`` (file named, one printable line), unclean ``InstanceError``, other exceptions (by type,
   each with a minimised input), and inputs over ``--bound`` seconds. With ``--baseline REV`` the same
   inputs also go through ``models/`` at that git revision (in a child process), for comparison.
2. CLI: a sample (mostly inputs that load) through ``solver.cli.main`` in a worker process that runs it
   in-process: ``validate``, ``solve --method M --time-limit 2`` with methods of the instance's family and
   ``simulate --policy P --time-limit 2`` with an online policy that runs on its workload.
   Counted by exit code; listed with their input (minimised for crashes) and message: a traceback (an
   exception escaping ``main``), an internal error (exit 1, ``main`` caught a fault that is not bad
   input), a solver failure (exit 1: an error or infeasible status, or an answer that does not verify),
   an exit 2 whose message names no file, a call over ``--time-limit`` + ``--cli-slack`` seconds and a
   call killed at ``--cli-hang`` seconds. The worker has a memory cap (``--memory-gib``); it is
   restarted after a hang or a crash.
3. Subprocesses: every k-th of those calls again as a user runs it, ``python -m fairpack ...`` in a
   fresh process with a timeout (``--cli-hang``) and the memory cap, one in four reading the input from
   standard input (``-``): exit codes, tracebacks on stderr, exit 2 without the file (or ``<stdin>``)
   named, hangs.

    python -m benchmarks.fuzz_campaign --data-dir ../shared/data
"""

from __future__ import annotations

import collections
import contextlib
import io
import json
import multiprocessing
import os
import random
import re
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from benchmarks._common import parser, save

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the mutation engine lives beside the fuzz test

from fuzzing import Seed, check_outcome, mutate, seeds  # noqa: E402

DEFAULT_BASELINE = "85d0f80"  # main before the loader rewrite


def make_input(all_seeds: list[Seed], seed: int, number: int) -> tuple[bytes, str, str]:
    """Input ``number``: (bytes, suffix, name of the seed it came from)."""
    rng = random.Random(f"{seed}-{number}")
    origin = all_seeds[rng.randrange(len(all_seeds))]
    data, suffix = mutate(origin, rng.randrange, steps=rng.choice([1, 2, 3, 5]))
    return data, suffix, origin.name


# --------------------------------------------------------------------------------------------- loader


class Hang(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise Hang("over the hang bound")


def load_outcome(path: Path, hang_s: int) -> tuple[str, str, float, str]:
    """(category, exception type, seconds, detail) of loading ``path``."""
    from fairpack.models.io import load_instance

    started = time.perf_counter()
    signal.alarm(hang_s)
    try:
        outcome: object = load_instance(path)
    except Hang:
        return "hang", "Hang", time.perf_counter() - started, ""
    except BaseException as error:  # the point is to see every kind
        if isinstance(error, KeyboardInterrupt):
            raise
        outcome = error
    finally:
        signal.alarm(0)
    elapsed = time.perf_counter() - started
    try:
        check_outcome(outcome, str(path))
    except AssertionError as failure:
        if type(outcome).__name__ == "InstanceError":
            return "unclean InstanceError", "InstanceError", elapsed, str(failure)[:300]
        summary = "".join(traceback.format_exception(outcome)[-3:]) if isinstance(outcome, BaseException) else ""
        return "other exception", type(outcome).__name__, elapsed, summary[-600:]
    return ("valid" if type(outcome).__name__ == "Instance" else "InstanceError"), "", elapsed, ""


def minimise(data: bytes, fails: Callable[[bytes], bool], budget: int) -> bytes:
    """A smaller input that still ``fails``: drop chunks of lines, then of bytes, halving the chunk size."""
    attempts = 0
    for unit in ("lines", "bytes"):
        parts = data.splitlines(keepends=True) if unit == "lines" else [bytes([b]) for b in data]
        size = max(1, len(parts) // 2)
        while size >= 1 and attempts < budget:
            start, changed = 0, False
            while start < len(parts) and attempts < budget:
                candidate = parts[:start] + parts[start + size :]
                attempts += 1
                if candidate and fails(b"".join(candidate)):
                    parts, changed = candidate, True
                else:
                    start += size
            if not changed:
                size //= 2
        data = b"".join(parts)
        if len(data) > 4000:  # byte-level steps on big inputs cost too many attempts
            break
    return data


BASELINE_CHILD = r"""
import json, resource, signal, sys, time
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[3]) * 2**30,) * 2)
sys.path.insert(0, sys.argv[1])
from fairpack.models.io import load_instance
class Hang(Exception): pass
def alarm(*_): raise Hang()
signal.signal(signal.SIGALRM, alarm)
for line in open(sys.argv[4]).read().splitlines()[int(sys.argv[5]):]:
    path = line.strip()
    started = time.perf_counter(); signal.alarm(int(sys.argv[2]))
    try:
        instance = load_instance(path); kind, name = "valid", ""
    except Hang:
        kind, name = "hang", "Hang"
    except BaseException as error:
        name = type(error).__name__
        kind = "InstanceError" if name == "InstanceError" else "other exception"
        if kind == "InstanceError" and not (str(error).isprintable() and str(error).startswith(path + ": ")):
            kind = "unclean InstanceError"
    finally:
        signal.alarm(0)
    print(json.dumps([kind, name, time.perf_counter() - started]), flush=True)
"""


def run_baseline(revision: str, inputs: list[Path], hang_s: int, memory_gib: int) -> dict[str, Any]:
    """Categories of the same inputs under ``models/`` at ``revision`` (a child process)."""
    counts: collections.Counter[str] = collections.Counter()
    kinds: collections.Counter[str] = collections.Counter()
    slow = 0
    with tempfile.TemporaryDirectory() as scratch:
        archive = subprocess.run(["git", "archive", revision, "models"], cwd=ROOT, capture_output=True, check=True)
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(scratch, filter="data")
        listing = Path(scratch) / "inputs.txt"
        listing.write_text("".join(f"{path}\n" for path in inputs))
        position = 0
        while position < len(inputs):  # a child that dies (e.g. memory) is restarted after the input
            command = [sys.executable, "-c", BASELINE_CHILD, scratch, str(hang_s), str(memory_gib), str(listing)]
            child = subprocess.Popen(
                [*command, str(position)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=scratch
            )
            assert child.stdout is not None
            for line in child.stdout:
                kind, name, seconds = json.loads(line)
                counts[kind] += 1
                if name and kind != "InstanceError":
                    kinds[name] += 1
                slow += seconds > 5
                position += 1
            if child.wait() != 0 and position < len(inputs):
                counts["other exception"] += 1
                kinds["process died (memory cap or signal)"] += 1
                position += 1
    return {"revision": revision, "counts": dict(counts), "exceptions": dict(kinds), "over_5_s": slow}


# ------------------------------------------------------------------------------------------------ CLI


def portable(text: str) -> str:
    """``text`` without this machine's paths: the checkout's prefix dropped, inputs' folders too."""
    return re.sub(r"\S*/(?=(?:cli-)?(?:input-[0-9]+|probe)[.a-z]+)", "", text.replace(f"{ROOT}/", ""))


def _worker(connection: Connection, memory_gib: int) -> None:
    """Run ``solver.cli.main(argv)`` for every argv received; send back what happened."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (memory_gib * 2**30,) * 2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # solvers' own C-level output
    os.dup2(devnull, 2)
    from fairpack.solver.cli import main

    while True:
        argv = connection.recv()
        out, err = io.StringIO(), io.StringIO()
        started = time.perf_counter()
        result: dict[str, Any] = {}
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                result["code"] = main(argv)
        except SystemExit as exit_:
            result["code"] = exit_.code if isinstance(exit_.code, int) else 2
        except BaseException as error:  # whatever escapes main() is a finding
            result["code"] = None
            result["exception"] = type(error).__name__
            result["traceback"] = _summary(error)
        result["seconds"] = time.perf_counter() - started
        lines = [portable(line) for line in err.getvalue().splitlines() if line.strip()]
        result["stderr"] = ([line for line in lines if line.startswith("fairpack:")] or lines)[-3:]
        # A solver failure (exit 1) says why on stdout: the status line and the checker's violations.
        said = [portable(line.strip()) for line in out.getvalue().splitlines()]
        result["stdout"] = [line for line in said[:1] + [x for x in said if x.startswith("VIOLATION")][:2] if line]
        connection.send(result)


def _summary(error: BaseException) -> str:
    """The exception and the innermost frames inside this project."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if "site-packages" not in f.filename]
    where = " <- ".join(
        f"{Path(f.filename).parent.name}/{Path(f.filename).name}:{f.lineno} {f.name}" for f in frames[::-1][:4]
    )
    return f"{type(error).__name__}: {str(error)[:200]} at {where}"


class Worker:
    """A worker process calling ``solver.cli.main``, killed and restarted when a call overruns."""

    def __init__(self, memory_gib: int) -> None:
        self.memory_gib = memory_gib
        self.start()

    def start(self) -> None:
        context = multiprocessing.get_context("spawn")
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_worker, args=(child, self.memory_gib), daemon=True)
        self.process.start()

    def call(self, argv: list[str], hang_s: float) -> dict[str, Any]:
        started = time.perf_counter()
        self.connection.send(argv)
        if self.connection.poll(hang_s):
            try:
                result: dict[str, Any] = self.connection.recv()
                return result
            except EOFError:
                pass
            self.restart()
            elapsed = time.perf_counter() - started
            return {"code": None, "exception": "worker died", "traceback": "", "stderr": [], "seconds": elapsed}
        self.restart()
        elapsed = time.perf_counter() - started
        return {"code": None, "exception": "hang", "traceback": "", "stderr": [], "seconds": elapsed}

    def restart(self) -> None:
        self.process.kill()  # the worker this object started
        self.process.join()
        self.start()

    def close(self) -> None:
        self.process.kill()
        self.process.join()


def family_of(path: Path) -> str | None:
    from fairpack.models.io import load_instance

    try:
        instance = load_instance(path)
    except Exception:  # any failure was counted by the loader pass
        return None
    if instance.jobs:
        return "jobs"
    return "hierarchy" if instance.hierarchy is not None else "flat"


def cli_calls(path: Path, family: str | None, rng: random.Random, time_limit: float) -> list[list[str]]:
    """``validate``, ``solve`` with two methods of the input's family and ``simulate`` with one online policy
    that runs on its workload (DAG jobs, or tenants' backlogs), each under ``--time-limit``."""
    from fairpack.solver.api import METHODS
    from fairpack.solver.registry import policies

    calls = [["validate", str(path)]]
    pool = [name for name, method in METHODS.items() if method.family == family] or list(METHODS)
    for method in rng.sample(pool, min(len(pool), 2 if family else 1)):
        calls.append(["solve", str(path), "--method", method, "--time-limit", str(time_limit)])
    workload = "jobs" if family == "jobs" else "backlogs"
    online = [name for name, record in policies().items() if workload in record.workloads]
    if family is not None and online:
        calls.append(["simulate", str(path), "--policy", rng.choice(online), "--time-limit", str(time_limit)])
    return calls


CRASHES = ("traceback", "worker died", "internal error (exit 1)")  # minimised when found


def _cli_problem(result: dict[str, Any], path: Path, limit: float) -> str | None:
    if result["code"] is None:
        return result["exception"] if result["exception"] in ("hang", "worker died") else "traceback"
    message = " ".join(result["stderr"])
    if result["code"] == 1:
        return "internal error (exit 1)" if "internal error" in message else "solver failure (exit 1)"
    if result["code"] == 2 and portable(str(path)) not in message:  # the worker made its lines portable
        return "exit 2 without the file named"
    if result["seconds"] > limit:
        return "over the time bound"
    return None


def subprocess_pass(args: Any, calls: list[tuple[list[str], Path]]) -> dict[str, Any]:
    """``calls`` through ``python -m fairpack`` in fresh processes (a quarter of them reading stdin)."""
    import resource

    def cap_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (args.memory_gib * 2**30,) * 2)

    codes: collections.Counter[str] = collections.Counter()
    problems: list[dict[str, Any]] = []
    started = time.perf_counter()
    for position, (argv, path) in enumerate(calls):
        piped = position % 4 == 3
        command = [argv[0], "-" if piped else str(path), *argv[2:]]
        began = time.perf_counter()
        try:
            done = subprocess.run(
                [sys.executable, "-m", "fairpack", *command], input=path.read_bytes() if piped else b"",
                capture_output=True, timeout=args.cli_hang, preexec_fn=cap_memory, cwd=ROOT,
            )  # fmt: skip
            code: int | None = done.returncode
            err = done.stderr.decode("utf-8", "backslashreplace")
        except subprocess.TimeoutExpired:  # run() killed the child it started
            code, err = None, ""
        seconds = time.perf_counter() - began
        named = "<stdin>" if piped else str(path)
        if code is None:
            problem = "hang"
        elif "Traceback (most recent call last)" in err:
            problem = "traceback"
        elif code not in (0, 1, 2):
            problem = f"exit {code}"
        elif code == 1 and "internal error" in err:
            problem = "internal error (exit 1)"
        elif code == 2 and named not in err:
            problem = "exit 2 without the file named"
        else:
            problem = ""
        codes["hang" if code is None else f"exit {code}"] += 1
        if problem:
            said = portable(err.strip())
            argv = ["fairpack", command[0], "-" if piped else "INPUT", *command[2:]]
            problems.append({"problem": problem, "argv": argv, "input": path.name, "exit": code,
                             "seconds": round(seconds, 2), "stderr": said[-600:]})  # fmt: skip
            print(f"subprocess {problem}: {' '.join(argv)} ({path.name}): {said[-200:]}", flush=True)
    return {
        "calls": len(calls),
        "piped": sum(1 for position in range(len(calls)) if position % 4 == 3),
        "exit_codes": dict(codes),
        "problems": problems,
        "seconds": round(time.perf_counter() - started, 1),
    }


# ----------------------------------------------------------------------------------------------- main


def loader_pass(args: Any, all_seeds: list[Seed], folder: Path) -> dict[str, Any]:
    """Every input through ``load_instance``; the inputs are left in ``folder`` for the CLI pass."""
    counts: collections.Counter[str] = collections.Counter()
    by_suffix: collections.Counter[str] = collections.Counter()
    failures: dict[str, dict[str, Any]] = {}
    slow: list[dict[str, Any]] = []
    paths: list[Path] = []
    valid: list[int] = []
    started = time.perf_counter()
    for number in range(args.inputs):
        data, suffix, origin = make_input(all_seeds, args.seed, number)
        path = folder / f"input-{number:05d}{suffix}"
        path.write_bytes(data)
        paths.append(path)
        by_suffix[suffix] += 1
        kind, name, seconds, detail = load_outcome(path, args.hang)
        counts[kind] += 1
        if kind == "valid":
            valid.append(number)
        if seconds > args.bound:
            slow.append({"input": number, "seed": origin, "bytes": len(data), "seconds": round(seconds, 2)})
        if kind in ("other exception", "unclean InstanceError", "hang"):
            entry = failures.setdefault(
                f"{kind}: {name}", {"count": 0, "first_input": number, "seed": origin, "detail": detail}
            )
            entry["count"] += 1
        if number % 1000 == 999:
            print(f"{number + 1} inputs, {dict(counts)}", flush=True)
    seconds = time.perf_counter() - started
    for key, entry in failures.items():  # a minimised example of each kind of failure
        data = paths[entry["first_input"]].read_bytes()
        probe = folder / f"probe{paths[entry['first_input']].suffix}"

        def fails(candidate: bytes, key: str = key, probe: Path = probe) -> bool:
            probe.write_bytes(candidate)
            kind, name, _, _ = load_outcome(probe, args.hang)
            return f"{kind}: {name}" == key

        small = data[:2000] if key.startswith("hang") else minimise(data, fails, 300)
        entry["minimised"] = small.decode("utf-8", "backslashreplace")[:3000]
    return {
        "counts": dict(counts),
        "by_suffix": dict(by_suffix),
        "failures": failures,
        "over_bound": slow,
        "bound_s": args.bound,
        "seconds": round(seconds, 1),
        "paths": paths,
        "valid": valid,
    }


def _crash_kind(result: dict[str, Any]) -> str:
    """What crashed, for minimising: the escaped exception's type, or the type an internal error names."""
    if result["code"] is None:
        return str(result.get("exception"))
    found = re.search(r"internal error: (\w+)", " ".join(result["stderr"]))
    return found.group(1) if found and result["code"] == 1 else ""


def _signature(problem: str, result: dict[str, Any], argv: list[str]) -> str:
    """What makes two CLI problems the same: the kind, the message or traceback without the file, the call."""
    text = result.get("traceback") or " ".join(result["stderr"])
    if problem == "solver failure (exit 1)":  # the status line without the instance's name, and the violation
        text = re.sub(r"^.*?: method ", "method ", " ".join(result.get("stdout", [])))
    text = re.sub(r"/\S*input-[0-9]+[.a-z]+", "FILE", text)[:160]
    return f"{problem}: {text} [{argv[0]}]"


def cli_pass(args: Any, paths: list[Path], valid: list[int], folder: Path) -> dict[str, Any]:
    """A sample through ``solver.cli.main``: mostly inputs that load (so the solvers are reached)."""
    rng = random.Random(args.seed)
    loaded = set(valid)
    invalid = [n for n in range(len(paths)) if n not in loaded]
    sample = rng.sample(valid, min(len(valid), args.cli_inputs * 2 // 3))
    sample += rng.sample(invalid, min(len(invalid), args.cli_inputs - len(sample)))
    worker = Worker(args.memory_gib)
    codes: collections.Counter[str] = collections.Counter()
    problems: dict[str, dict[str, Any]] = {}
    limit = args.time_limit + args.cli_slack
    started = time.perf_counter()
    calls = 0
    made: list[tuple[list[str], Path]] = []
    try:
        for position, number in enumerate(sorted(sample)):
            path = paths[number]
            for argv in cli_calls(path, family_of(path), rng, args.time_limit):
                result = worker.call(argv, args.cli_hang)
                calls += 1
                made.append((argv, path))
                codes[f"exit {result['code']}" if result["code"] is not None else result["exception"]] += 1
                problem = _cli_problem(result, path, limit)
                if problem is None:
                    continue
                signature = _signature(problem, result, argv)
                if signature in problems:  # seen: count it, and note the method
                    problems[signature]["count"] += 1
                    method = argv[3] if len(argv) > 3 else argv[0]
                    if method not in problems[signature]["methods"]:
                        problems[signature]["methods"].append(method)
                    continue
                data = path.read_bytes()
                if problem in CRASHES:
                    probe = folder / f"cli-probe{path.suffix}"
                    kind = _crash_kind(result)

                    def fails(candidate: bytes, argv: list[str] = argv, kind: str = kind, probe: Path = probe) -> bool:
                        probe.write_bytes(candidate)
                        return _crash_kind(worker.call([argv[0], str(probe), *argv[2:]], args.cli_hang)) == kind

                    data = minimise(data, fails, 40)
                problems[signature] = {
                    "problem": problem,
                    "count": 1,
                    "methods": [argv[3] if len(argv) > 3 else argv[0]],
                    "argv": ["fairpack", argv[0], "INPUT", *argv[2:]],
                    "input": number,
                    "seconds": round(result["seconds"], 2),
                    "exit": result["code"],
                    "traceback": result.get("traceback", ""),
                    "stderr": result["stderr"],
                    "stdout": result.get("stdout", []),
                    "input_text": data.decode("utf-8", "backslashreplace")[:3000],
                }
                print(f"CLI {signature[:200]}", flush=True)
            if position % 50 == 49:
                print(f"CLI: {position + 1} inputs, {calls} calls, {dict(codes)}", flush=True)
    finally:
        worker.close()
    step = max(1, len(made) // max(1, args.subprocess_calls))
    return {
        "subprocess_calls": made[::step][: args.subprocess_calls],
        "inputs": len(sample),
        "calls": calls,
        "exit_codes": dict(codes),
        "problems": list(problems.values()),
        "time_limit": args.time_limit,
        "bound_s": limit,
        "hang_s": args.cli_hang,
        "seconds": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    arguments = parser(__doc__.splitlines()[0])
    arguments.add_argument("--inputs", type=int, default=10_000)
    arguments.add_argument("--seed", type=int, default=2026)
    arguments.add_argument("--bound", type=float, default=5.0, help="seconds one load may take")
    arguments.add_argument("--hang", type=int, default=60, help="seconds after which a load counts as a hang")
    arguments.add_argument("--cli-inputs", type=int, default=330)
    arguments.add_argument("--time-limit", type=float, default=2.0)
    arguments.add_argument("--cli-slack", type=float, default=10.0, help="seconds over --time-limit allowed")
    arguments.add_argument("--cli-hang", type=float, default=30.0)
    arguments.add_argument("--memory-gib", type=int, default=4)
    arguments.add_argument("--subprocess-calls", type=int, default=80, help="CLI calls repeated in fresh processes")
    arguments.add_argument("--baseline", default=DEFAULT_BASELINE, help="git revision to compare ('' to skip)")
    args = arguments.parse_args()
    data_dir = Path(args.data_dir)
    all_seeds = seeds(data_dir if data_dir.is_dir() else None)
    load_start = os.getloadavg()
    signal.signal(signal.SIGALRM, _alarm)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        loader = loader_pass(args, all_seeds, folder)
        paths, valid = loader.pop("paths"), loader.pop("valid")
        baseline = run_baseline(args.baseline, paths, args.hang, args.memory_gib) if args.baseline else None
        if baseline:
            print(f"baseline {args.baseline}: {baseline['counts']}", flush=True)
        cli = cli_pass(args, paths, valid, folder)
        fresh = subprocess_pass(args, cli.pop("subprocess_calls"))
    payload = {
        "seed": args.seed,
        "inputs": args.inputs,
        "inputs_by_suffix": loader.pop("by_suffix"),
        "seeds": [seed.name for seed in all_seeds],
        "loader": loader,
        "baseline": baseline,
        "cli": cli,
        "subprocess": fresh,
        "load_average": [load_start, os.getloadavg()],
    }
    save("fuzz_campaign", payload, _markdown(payload), args.out)


def _markdown(payload: dict[str, Any]) -> str:
    loader, cli, baseline = payload["loader"], payload["cli"], payload["baseline"]
    start, end = payload["load_average"]
    order = ["valid", "InstanceError", "unclean InstanceError", "other exception", "hang"]
    kinds = ", ".join(f"{count:,} {suffix}" for suffix, count in payload["inputs_by_suffix"].items())
    lines = [
        "# Fuzz campaign: mutated instance files through the loader and the CLI",
        "",
        f"{payload['inputs']:,} inputs (seed {payload['seed']}; {kinds}), "
        f"mutated from {', '.join(payload['seeds'])} by `tests/fuzzing.py`. Load average {start[0]:.2f} at the start, "
        f"{end[0]:.2f} at the end ({os.cpu_count()} cores, shared).",
        "",
        "## Loader (`models.io.load_instance`)",
        "",
        "| outcome | this loader |" + (f" baseline `{baseline['revision']}` |" if baseline else ""),
        "|---|---|" + ("---|" if baseline else ""),
    ]
    for kind in order:
        row = f"| {kind} | {loader['counts'].get(kind, 0):,} |"
        if baseline:
            row += f" {baseline['counts'].get(kind, 0):,} |"
        lines.append(row)
    row = f"| over {loader['bound_s']:g} s | {len(loader['over_bound'])} |"
    lines.append(row + (f" {baseline['over_5_s']} |" if baseline else ""))
    lines.append("")
    lines.append(f"All {payload['inputs']:,} inputs took {loader['seconds']:.0f} s through this loader.")
    if baseline and baseline["exceptions"]:
        lines.append(
            "Baseline exceptions by type: "
            + ", ".join(f"{name} {count}" for name, count in sorted(baseline["exceptions"].items()))
            + "."
        )
    for key, entry in loader["failures"].items():
        where = f"input {entry['first_input']}, from {entry['seed']}"
        lines += ["", f"- **{key}** x{entry['count']} ({where}): {entry['detail']}", "", "```"]
        lines += [entry.get("minimised", "")[:800], "```"]
    lines += [
        "",
        "## CLI (`fairpack.solver.cli.main`, in-process in a worker; `validate`, "
        f"`solve --time-limit {cli['time_limit']:g}`)",
        "",
        f"{cli['inputs']} inputs, {cli['calls']} calls in {cli['seconds']:.0f} s. Outcomes: "
        + ", ".join(f"{name} {count}" for name, count in sorted(cli["exit_codes"].items()))
        + f". A call counts as over the bound past {cli['bound_s']:g} s and as a hang past {cli['hang_s']:g} s "
        "(killed).",
        "",
    ]
    if not cli["problems"]:
        lines.append("No tracebacks, internal errors, solver failures, hangs or unnamed input errors.")
    else:
        lines += ["| problem | times | first call (methods) | exit | s | summary |", "|---|---|---|---|---|---|"]
        for entry in cli["problems"]:
            said = entry["traceback"] or " ".join(entry["stderr"] + entry.get("stdout", []))
            summary = said[:300].replace("|", "\\|")
            call = f"`{' '.join(entry['argv'])}` ({', '.join(entry['methods'])})"
            lines.append(
                f"| {entry['problem']} | {entry['count']} | {call} | {entry['exit']} | {entry['seconds']} | {summary} |"
            )
        lines += ["", "Inputs of the problems above (minimised for tracebacks; full list in the JSON):", ""]
        for entry in cli["problems"]:
            lines += [f"- {entry['problem']}, `{' '.join(entry['argv'])}` (input {entry['input']}):", "", "```",
                      entry["input_text"][:600], "```"]  # fmt: skip
    fresh = payload["subprocess"]
    lines += [
        "",
        "## CLI in fresh processes (`python -m fairpack`, as a user runs it)",
        "",
        f"{fresh['calls']} of the calls above, {fresh['piped']} of them reading the input from standard input "
        f"(`-`), in {fresh['seconds']:.0f} s. Outcomes: "
        + ", ".join(f"{name} {count}" for name, count in sorted(fresh["exit_codes"].items()))
        + ".",
        "",
    ]
    if not fresh["problems"]:
        lines.append("No tracebacks, internal errors, hangs or unnamed input errors.")
    for entry in fresh["problems"]:
        lines.append(f"- {entry['problem']}: `{' '.join(entry['argv'])}` (exit {entry['exit']}, "
                     f"{entry['seconds']} s): {entry['stderr'][-300:]}")  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    main()

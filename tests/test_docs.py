"""The documentation cannot drift from the code: README.md and the guide in docs/ show what fairpack does.

* The generated pages (``docs/cli.md`` from the argparse parser, ``docs/methods.md`` and README's table of methods
  from the registry) are what ``docs/gen.py`` writes today.
* Every example runs. In a ```` ```console ```` block, a line starting with ``$ `` is a command, run from the
  repository's root with ``fairpack`` on the PATH, and the lines after it, up to the next command, are its output
  (standard output and standard error), compared line by line (trailing spaces aside). Two markers:

  - a line that is only ``...`` stands for any number of output lines (none included);
  - a line ending in ``# times vary`` (after two or more spaces) is compared with every number on it free, so
    timings (``build 0.006 s, solve 0.001 s``) do not have to match.

  A command must exit 0 unless its output shows an error (a line starting ``fairpack: ``, not ``fairpack: note:``).
  A line ending in a backslash continues on the next, as in a shell. Each ``fairpack`` line
  of a ```` ```sh ```` block runs too and must exit 0 (other lines there, ``pip`` or ``make``, are not run).
  ``/tmp/`` in a command or its output is a fresh temporary folder. Commands that read the shared data folder
  (``../shared/data``) are skipped when it is absent.
* Every command line shown uses options its command has, and writes no file into the folder it runs in.
* Every repository path the docs name (a relative link, or a code span such as ``solver/drfh/model.py``) exists.
* No documentation or source file names an internal issue number.

Python examples (```` ```python ```` blocks) are run by ``tests/test_readme_python.py``.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import os
import re
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from fairpack.solver.cli.main import build_parser, parsers

ROOT = Path(__file__).resolve().parents[1]
#: The pages whose examples run: README and the user guide (the generated references have none).
GUIDE = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: Pages whose paths must exist: the guide and the benchmarks' README.
PAGES = [*GUIDE, ROOT / "benchmarks" / "README.md"]
DATA = ROOT.parent / "shared" / "data"
TIMES_VARY = re.compile(r"\s{2,}# times vary$")
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
FLAG = re.compile(r"(?<![\w/-])(--?[a-z][a-z0-9-]*)")
OUTPUT_OPTIONS = ("-o", "--output", "--out", "--plot")


def _gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_gen", ROOT / "docs" / "gen.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


# --- generated pages ------------------------------------------------------------------------------------------


def test_generated_pages_are_up_to_date() -> None:
    stale = [_relative(path) for path, text in _gen().pages().items() if path.read_text(encoding="utf-8") != text]
    assert not stale, f"run python docs/gen.py: {stale} differ from what the code gives"


def test_every_command_and_method_is_in_the_references() -> None:
    from fairpack.solver.registry import method_names

    cli = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    leaves = [p for p in parsers(build_parser())[1:] if not _subcommands(p)]
    assert all(f"## `{p.prog}`" in cli for p in leaves)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert all(f"`{name}`" in readme for name in method_names())


# --- examples -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    """One code block: its commands, each with the output the page shows (None: a ```sh block's, not shown)."""

    page: str
    line: int
    commands: tuple[tuple[str, tuple[str, ...] | None], ...]

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def _blocks(text: str, language: str) -> list[tuple[int, list[str]]]:
    """(first line number, lines) of every fenced block of ``language``."""
    found, lines = [], text.splitlines()
    k = 0
    while k < len(lines):
        if lines[k].strip() == f"```{language}":
            end = next(j for j in range(k + 1, len(lines)) if lines[j].strip() == "```")
            found.append((k + 2, lines[k + 1 : end]))
            k = end
        k += 1
    return found


def _joined(lines: list[str]) -> list[str]:
    """``lines`` with every command continued by a trailing backslash joined into one line."""
    out: list[str] = []
    for line in lines:
        if out and out[-1].endswith("\\"):
            out[-1] = out[-1][:-1].rstrip() + " " + line.strip()
        else:
            out.append(line)
    return out


def examples() -> list[Example]:
    found: list[Example] = []
    for page in GUIDE:
        text, name = page.read_text(encoding="utf-8"), _relative(page)
        for first, raw in _blocks(text, "console"):
            lines = _joined(raw)
            starts = [k for k, line in enumerate(lines) if line.startswith("$ ")]
            assert starts and starts[0] == 0, f"{name}:{first}: a console block starts with a '$ ' command"
            commands = tuple((lines[k][2:], tuple(lines[k + 1 : stop])) for k, stop in itertools.pairwise([*starts,
                                                                                                        len(lines)]))
            found.append(Example(name, first, commands))
        for first, raw in _blocks(text, "sh"):
            shell = tuple((line.split("  #")[0].strip(), None) for line in _joined(raw)
                          if line.strip().startswith("fairpack "))  # fmt: skip
            if shell:
                found.append(Example(name, first, shell))
    return found


EXAMPLES = examples()


def test_the_guide_has_examples() -> None:
    pages = {example.page for example in EXAMPLES}
    assert {"README.md", "docs/tour.md", "docs/format.md", "docs/results.md"} <= pages
    assert sum(output is not None for example in EXAMPLES for _, output in example.commands) >= 30


def _matches(expected: tuple[str, ...], actual: list[str]) -> bool:
    """``actual`` lines against ``expected`` with its ``...`` and ``# times vary`` markers."""
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head.strip() == "...":
        return any(_matches(rest, actual[k:]) for k in range(len(actual) + 1))
    if not actual:
        return False
    if TIMES_VARY.search(head):
        same = NUMBER.sub("#", TIMES_VARY.sub("", head).rstrip()) == NUMBER.sub("#", actual[0].rstrip())
    else:
        same = head.rstrip() == actual[0].rstrip()
    return same and _matches(rest, actual[1:])


@pytest.fixture(scope="module")
def shell_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A PATH whose ``fairpack`` is this checkout's, run by this interpreter."""
    folder = tmp_path_factory.mktemp("bin")
    script = folder / "fairpack"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m fairpack "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"


#: A progress report of a long solve (``fairpack.solver.progress``): ``fairpack:      3.0 s  spacetime-cp: ...``.
PROGRESS = re.compile(r"^fairpack: +\d+(\.\d+)? s  ")


def _run(command: str, expected: tuple[str, ...] | None, where: str, path: str, tmp: Path) -> None:
    """Run one command of a page (``/tmp/`` standing for ``tmp``) and compare what it prints with ``expected``."""
    if "../shared/data" in command and not DATA.is_dir():
        pytest.skip("needs the shared data folder")
    env = {**os.environ, "PATH": path, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
    done = subprocess.run(["bash", "-o", "pipefail", "-c", command.replace("/tmp/", f"{tmp}/") + " 2>&1"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300, check=False)  # fmt: skip
    # A long solve reports its progress every few seconds on stderr: how many such lines depends on the machine.
    shown = "".join(line for line in done.stdout.replace(f"{tmp}/", "/tmp/").splitlines(keepends=True)
                    if not PROGRESS.match(line))  # fmt: skip
    if expected is None:
        assert done.returncode == 0, f"{where}: `{command}` exited {done.returncode}:\n{shown[-2000:]}"
        return
    error = any(line.startswith("fairpack: ") and not line.startswith("fairpack: note:") for line in expected)
    assert (done.returncode != 0) == error, f"{where}: `{command}` exited {done.returncode}:\n{shown}"
    assert _matches(expected, shown.splitlines()), (
        f"{where}: `{command}` printed\n{shown}\nwhere the page shows\n" + "\n".join(expected))


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_example_runs_and_shows_what_the_page_shows(example: Example, shell_path: str, tmp_path: Path) -> None:
    """The commands of one block run in order, in one temporary folder (a later one may read what an earlier one
    wrote)."""
    for command, expected in example.commands:
        _run(command, expected, str(example), shell_path, tmp_path)


def test_markers_work() -> None:
    assert _matches(("a", "  build 0.006 s, solve 0.001 s   # times vary", "...", "z"),
                    ["a", "  build 1.5 s, solve 20 s", "x", "y", "z"])  # fmt: skip
    assert not _matches(("  build 0.006 s, solve 0.001 s   # times vary",), ["  built 0.006 s, solve 0.001 s"])
    assert not _matches(("a", "..."), ["b"]) and _matches(("...",), [])
    assert not _matches(("objective 2.5",), ["objective 2.6"])


# --- command lines --------------------------------------------------------------------------------------------


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {name for action in parser._actions for name in action.option_strings}


def _command(words: list[str]) -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser that ``fairpack WORDS...`` reaches, and the words after its command name."""
    parser = build_parser()
    for index, word in enumerate(words):
        children = _subcommands(parser)
        if word not in children:
            return parser, words[index:]
        parser = children[word]
    return parser, []


def _command_lines() -> list[tuple[str, str]]:
    """(page, ``fairpack`` command without the program name) for every command line in the guide's code blocks
    and code spans, one per pipeline stage."""
    found = []
    for page in GUIDE:
        if page.name == "cli.md":  # generated from the parser itself
            continue
        text = page.read_text(encoding="utf-8")
        blocks = re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S)
        texts = [line for block in blocks for line in block.splitlines()]
        prose = re.sub(r"```[a-z]*\n.*?```", "", text, flags=re.S)
        texts += [span.replace("\n", " ") for span in re.findall(r"`([^`\n]*(?:\n[^`\n]+)?)`", prose)]
        for line in texts:
            for stage in line.split(" | "):
                hit = re.search(r"(?:^|[\s/$])fairpack\s+(.*)", stage)
                if hit:
                    found.append((_relative(page), hit.group(1).split("  #")[0].strip()))
    return found


def test_command_lines_use_options_their_command_has() -> None:
    lines = _command_lines()
    assert len(lines) > 30
    for page, command in lines:
        parser, rest = _command(command.split())
        if parser.prog == "fairpack" and rest and not rest[0].startswith("-"):
            continue  # prose: "fairpack's two parts"
        known = _options(parser) | {"--version"}
        for flag in FLAG.findall(" ".join(word for word in rest if not word.startswith(("'", '"')))):
            assert flag in known, f"{page}: `fairpack {command}`: {parser.prog} has no option {flag}"


def test_command_lines_write_no_file_into_the_folder_they_run_in() -> None:
    for page, command in _command_lines():
        for option, value in itertools.pairwise(command.split()):
            placeholder = value == "..." or value.split(".")[0].isupper()  # TABLE.parquet, FILE
            if option in OUTPUT_OPTIONS and not value.startswith("-") and not placeholder:
                assert "/" in value, f"{page}: `fairpack {command}` writes {value} where it runs"


def test_every_option_the_guide_mentions_belongs_to_a_command() -> None:
    """A bare ``--option`` in the guide's prose is an option of some fairpack command (none renamed or gone)."""
    every = set().union(*(_options(parser) for parser in parsers(build_parser()))) | {"--version"}
    for page in GUIDE:
        prose = re.sub(r"```[a-z]*\n.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for span in re.findall(r"`(--?[a-z][^`]*)`", prose):
            flag = FLAG.match(span)
            assert flag is not None and flag.group(1) in every, f"{_relative(page)}: `{span}`: no command has it"


# --- paths ----------------------------------------------------------------------------------------------------

#: A code span naming a file or folder of the repository: a top-level folder, then more of the path.
REPO_PATH = re.compile(r"(?:models|solver|instances|notebooks|benchmarks|tests|docs|fairpack)/[\w./-]*")


def _paths(page: Path) -> list[tuple[str, Path]]:
    text = page.read_text(encoding="utf-8")
    found = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):  # links and images
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        found.append((target, (page.parent / target.split("#")[0]).resolve()))
    prose = re.sub(r"```[a-z]*\n.*?```", "", text, flags=re.S)
    for span in re.findall(r"`([^`\n]+)`", prose):
        for word in span.split():
            if REPO_PATH.fullmatch(word) and not any(mark in word for mark in "*{<"):
                found.append((word, ROOT / word.rstrip(".,;:")))
    return found


@pytest.mark.parametrize("page", PAGES, ids=_relative)
def test_every_path_the_docs_name_exists(page: Path) -> None:
    missing = [target for target, path in _paths(page) if not path.exists()]
    assert not missing, f"{_relative(page)} names paths that do not exist: {missing}"


# --- issue numbers --------------------------------------------------------------------------------------------

ISSUE = re.compile(r"\bissues?\s*#?\s*\d+", re.IGNORECASE)
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yaml", ".yml", ".ipynb", ".cfg", ".txt", ".xml", ""}
SKIP_DIRS = {".git", ".venv", "site", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "node_modules"}


def _text_files() -> list[Path]:
    """The repository's text files: what git tracks or would (ignored build output is not the project's)."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=False, timeout=120)  # fmt: skip
    if listed.returncode == 0 and listed.stdout.strip():
        paths = [ROOT / line for line in listed.stdout.splitlines()]
        return [path for path in paths if path.is_file() and not path.is_symlink()
                and path.suffix in TEXT_SUFFIXES and (path.suffix or path.name in {"Makefile", "LICENSE"})]
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")]
        for name in files:
            path = Path(folder) / name
            if path.suffix in TEXT_SUFFIXES and (path.suffix or name in {"Makefile", "LICENSE"}):
                found.append(path)
    return found


def test_no_file_names_an_internal_issue_number() -> None:
    files = _text_files()
    assert any(path.name == "Makefile" for path in files) and len(files) > 100
    hits = [f"{_relative(path)}: {match.group(0)!r}" for path in files
            for match in ISSUE.finditer(path.read_text(encoding="utf-8", errors="replace"))]  # fmt: skip
    assert not hits, "say what is meant instead of an issue number: " + "; ".join(hits)

"""README and ``--help`` agree: the options README documents are the parsers' options, with their defaults.

* The command-line reference (between ``<!-- cli:begin -->`` and ``<!-- cli:end -->``) has one table per
  command; its options are exactly the parser's (both ways), its choices (``--format table|json|csv``)
  exactly the parser's choices, and its default column names the parser's default where there is one.
* Every ``fairpack ...`` command line anywhere in README uses options its command has, and every bare
  ``--option`` README mentions belongs to some fairpack command.
* Every method ``fairpack solve --method`` accepts is named in README.
* No README command writes a file into the folder it runs in (``-o result.json`` would land untracked in
  the repository root): outputs go to a subfolder or elsewhere.
"""

from __future__ import annotations

import argparse
import itertools
import re
from pathlib import Path

import pytest

from fairpack.solver.cli.main import build_parser, parsers
from fairpack.solver.registry import method_names

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
BEGIN, END = "<!-- cli:begin -->", "<!-- cli:end -->"
FLAG = re.compile(r"(?<![\w/-])(--?[a-z][a-z0-9-]*)")
CELL_SPLIT = re.compile(r"(?<!\\)\|")
OUTPUT_OPTIONS = ("-o", "--output", "--out", "--plot")


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Every option string of ``parser`` (but --help and --version) -> its action."""
    return {name: action for action in parser._actions for name in action.option_strings
            if not isinstance(action, argparse._HelpAction | argparse._VersionAction)}  # fmt: skip


def _children(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _command(words: list[str]) -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser that ``fairpack WORDS...`` reaches, and the words after its command name."""
    parser = build_parser()
    for index, word in enumerate(words):
        children = _children(parser)
        if word not in children:
            return parser, words[index:]
        parser = children[word]
    return parser, []


def _reference() -> dict[str, list[list[str]]]:
    """The reference block: command prog ('fairpack solve') -> its table rows (cells, unescaped)."""
    block = README[README.index(BEGIN) : README.index(END)]
    tables: dict[str, list[list[str]]] = {}
    current = None
    for line in block.splitlines():
        heading = re.match(r"#### `fairpack ([^`]*)`", line)
        if heading:
            parser, _ = _command(heading.group(1).split())
            current = parser.prog
            assert current not in tables, f"{current} documented twice"
            tables[current] = []
        elif line.startswith("| `") and current is not None:
            cells = [cell.strip().replace("\\|", "|") for cell in CELL_SPLIT.split(line.strip())[1:-1]]
            tables[current].append(cells)
    return tables


def _leaf_commands() -> list[argparse.ArgumentParser]:
    return [parser for parser in parsers(build_parser())[1:] if not _children(parser)]


def test_every_command_is_in_the_reference() -> None:
    documented = set(_reference())
    assert documented == {parser.prog for parser in _leaf_commands()}


@pytest.mark.parametrize("parser", _leaf_commands(), ids=lambda parser: parser.prog)
def test_reference_options_are_the_parsers(parser: argparse.ArgumentParser) -> None:
    rows = _reference()[parser.prog]
    options = _options(parser)
    documented: set[str] = set()
    for option_cell, default_cell, *_ in rows:
        flags = FLAG.findall(option_cell)
        assert flags, f"{parser.prog}: row without an option: {option_cell}"
        documented.update(flags)
        for flag in flags:
            assert flag in options, f"{parser.prog}: README documents {flag}, which --help does not have"
            action = options[flag]
            written = re.search(rf"`{re.escape(flag)} ([^`]+)`", option_cell)
            if action.choices is not None and action.metavar is None:  # --help lists them: so does README
                assert written is not None and set(written.group(1).split("|")) == set(action.choices), (
                    f"{parser.prog} {flag}: README's choices differ from {sorted(action.choices)}")
            if action.required:
                assert default_cell == "required", f"{parser.prog} {flag} is required"
            elif isinstance(action, argparse._StoreTrueAction):
                assert default_cell == "off", f"{parser.prog} {flag} is a switch: its default is off"
            elif action.default is not None:
                assert f"`{action.default}`" in default_cell, (
                    f"{parser.prog} {flag}: README's default {default_cell!r}, --help's {action.default!r}")
    missing = {name for name in options if name not in documented}
    assert not missing, f"{parser.prog}: {sorted(missing)} are not in README's command-line reference"


def _commands_in_readme() -> list[str]:
    """Every ``fairpack ...`` command line in README: from code spans and code blocks, one per pipeline stage."""
    blocks = re.findall(r"```[a-z]*\n(.*?)```", README, flags=re.S)
    texts = [line for block in blocks for line in block.splitlines()]  # a code block: one command a line
    prose = re.sub(r"```[a-z]*\n.*?```", "", README, flags=re.S)
    texts += [span.replace("\n", " ") for span in re.findall(r"`([^`\n]*(?:\n[^`\n]+)?)`", prose)]  # spans
    commands = []
    for text in texts:
        for line in text.split(" | "):  # a pipeline: each stage on its own
            found = re.search(r"(?:^|[\s/])fairpack\s+(.*)", line)
            if found:
                commands.append(found.group(1).split("#")[0].strip())
    return commands


def test_readme_command_lines_use_options_their_command_has() -> None:
    commands = _commands_in_readme()
    assert len(commands) > 15
    for command in commands:
        parser, rest = _command(command.split())
        if parser.prog == "fairpack" and rest and not rest[0].startswith("-"):
            continue  # prose such as "fairpack's two top-level packages"
        known = set(_options(parser)) | {"-h", "--help"} | ({"--version"} if parser.prog == "fairpack" else set())
        for flag in FLAG.findall(" ".join(rest)):
            assert flag in known, f"README: `fairpack {command}`: {parser.prog} has no option {flag}"


def test_every_bare_option_in_readme_belongs_to_a_command() -> None:
    prose = re.sub(r"```[a-z]*\n.*?```", "", README, flags=re.S)
    every = set().union(*(_options(parser) for parser in parsers(build_parser()))) | {"--version"}
    for span in re.findall(r"`(--?[a-z][^`]*)`", prose):
        flag = FLAG.match(span)
        assert flag is not None and flag.group(1) in every, f"README mentions `{span}`: no fairpack command has it"


def test_every_method_is_named_in_readme() -> None:
    missing = [name for name in method_names() if f"`{name}`" not in README]
    assert not missing, f"README does not name {missing}"


def test_readme_commands_write_no_file_into_the_folder_they_run_in() -> None:
    for command in _commands_in_readme():
        words = command.split()
        for option, value in itertools.pairwise(words):
            if option in OUTPUT_OPTIONS and not value.startswith("-"):
                assert "/" in value, f"README: `fairpack {command}` writes {value} where it runs"


def test_every_generate_family_is_named_in_readme() -> None:
    generate = _command(["generate"])[0]
    family = next(action for action in generate._actions if action.dest == "family")
    block = README[README.index("#### `fairpack generate FAMILY`") : README.index(END)]
    missing = [name for name in family.choices or () if f"`{name}`" not in block]
    assert not missing, f"README's fairpack generate does not name {missing}"
    assert all(name in (family.help or "") for name in family.choices or ())  # and neither does --help

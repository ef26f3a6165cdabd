"""A sweep grid's own instances: the ``instances`` entries (files, globs, folders) resolved to instance files.

An entry is a path relative to the sweep file's folder (or absolute; ``~`` is expanded):

* a file ending in ``.yaml``, ``.yml``, ``.json`` (``models.io.load_instance``) or ``.sm`` (PSPLIB,
  ``models.psplib``);
* a folder: every ``*.yaml``, ``*.yml``, ``*.json`` and ``*.sm`` file directly in it, sorted by name;
* a glob (``*``, ``?``, ``[...]``; ``**`` spans folders): the instance files it matches, sorted, and the
  instance files of the folders it matches; matched files of other suffixes are passed over.

Every file is loaded once when the sweep is read, so a bad file stops the sweep before any task runs;
the task loads it again in its own process. From Python (``fairpack.sweep``) an entry may also be an
``Instance`` object, which travels to the task's process with the task.

A file's ``id`` (its row identity) is its path relative to the sweep file's folder, with ``/``
separators (``cases/a.yaml``, ``../shared/j301_1.sm``); an ``Instance`` object's is its name.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairpack.models.generators.families import instance_kind
from fairpack.models.io import load_instance
from fairpack.models.types import Instance, InstanceError

#: The ``family`` of a grid that runs on instance files (and of its rows).
FILE_FAMILY = "file"
#: The suffixes of instance files, as a folder or glob entry picks them.
SUFFIXES = (".yaml", ".yml", ".json", ".sm")
_MAGIC = frozenset("*?[")


class EntryError(ValueError):
    """An ``instances`` entry that names no usable instance (the sweep reader adds the file and field)."""


@dataclass(frozen=True)
class FileInstance:
    """One instance of a grid's ``instances``: a file, or (from Python) an ``Instance`` object.

    Attributes
    ----------
    id : str
        The row identity: the file's path relative to the sweep file's folder (``/`` separators), or the
        ``Instance`` object's name.
    kind : {'flat', 'hierarchy', 'jobs'}
        What it holds (``models.generators.families.instance_kind``): which methods of the grid run on it.
    path : str or None
        The file's absolute path, which the task loads (task processes and Dask workers need not share
        the sweep's working folder).
    instance : Instance or None
        The object itself, for an entry given as one.
    """

    id: str
    kind: str
    path: str | None = None
    instance: Instance | None = field(default=None, compare=False, repr=False)

    def load(self) -> Instance:
        """The instance: loaded from its file, or the object given."""
        if self.instance is not None:
            return self.instance
        if self.path is None:
            raise InstanceError("an instance entry needs a file or an Instance object", "instances")
        return load_instance(self.path)

    @property
    def psplib(self) -> bool:
        """Whether it is a PSPLIB ``.sm`` file (whose best-known makespan the data folder may list)."""
        return self.path is not None and self.path.lower().endswith(".sm")


def file_id(path: str, base: Path) -> str:
    """``path`` relative to ``base`` with ``/`` separators (absolute when there is no relative path)."""
    try:
        return Path(os.path.relpath(path, base)).as_posix()
    except ValueError:  # another drive (Windows)
        return Path(path).as_posix()


def _folder_files(folder: str) -> list[str]:
    names = sorted(name for name in os.listdir(folder) if name.lower().endswith(SUFFIXES))
    return [os.path.join(folder, name) for name in names if os.path.isfile(os.path.join(folder, name))]


def _where(entry: str, base: Path) -> str:
    return "" if os.path.isabs(os.path.expanduser(entry)) else f" (in {base})"


def match_entry(entry: str, base: Path) -> list[str]:
    """The absolute paths of the instance files an ``instances`` entry names, in order.

    Raises
    ------
    EntryError
        It names nothing, or a file that is no instance file by its suffix.
    """
    expanded = os.path.expanduser(entry)
    if not any(character in _MAGIC for character in expanded):
        path = os.path.abspath(os.path.join(base, expanded))
        if os.path.isdir(path):
            inside = _folder_files(path)
            if not inside:
                suffixes = ", ".join(SUFFIXES)
                raise EntryError(f"no instance file ({suffixes}) in the folder {entry!r}{_where(entry, base)}")
            return inside
        if not os.path.isfile(path):
            raise EntryError(f"no such file or folder {entry!r}{_where(entry, base)}")
        if not path.lower().endswith(SUFFIXES):
            raise EntryError(f"{entry!r} is not an instance file: its name ends in none of {', '.join(SUFFIXES)}")
        return [path]
    files: list[str] = []
    for found in sorted(glob.glob(expanded, root_dir=base, recursive=True)):
        path = os.path.abspath(os.path.join(base, found))
        if os.path.isdir(path):
            files += _folder_files(path)
        elif path.lower().endswith(SUFFIXES):
            files.append(path)
    if not files:
        raise EntryError(f"no file matches {entry!r}{_where(entry, base)}")
    return files


def read_entry(entry: Any, base: Path) -> Iterator[FileInstance]:
    """The instances of one ``instances`` entry, each loaded once to check it and learn its kind.

    Raises
    ------
    EntryError
        The entry names nothing usable, or a file fails to load (the reason is the loader's, naming the
        file and the field at fault).
    """
    if isinstance(entry, Instance):
        yield FileInstance(entry.name, instance_kind(entry), instance=entry)
        return
    if not isinstance(entry, str | os.PathLike) or not str(entry):
        raise EntryError(f"expected a file, folder or glob (a string), got {entry!r}")
    for path in match_entry(os.fspath(entry), base):
        try:
            instance = load_instance(path)
        except InstanceError as error:
            raise EntryError(str(error)) from None
        yield FileInstance(file_id(path, base), instance_kind(instance), path)

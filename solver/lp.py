"""A solver-neutral LP/MILP built from numpy arrays.

Formulations reserve contiguous blocks of variables and rows, emit constraint coefficients as COO
triplets, and the builder converts everything to one CSR matrix at the end. Nothing here knows about
any solver; backends translate a ``LinearProgram`` into their own API.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from fairpack.models.types import FloatArray

Sense = Literal["min", "max"]


@dataclass(frozen=True)
class Block:
    """A contiguous range of variables (or rows) viewed with a shape, e.g. tenants x servers."""

    name: str
    start: int
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 1

    @property
    def stop(self) -> int:
        return self.start + self.size

    def indices(self) -> npt.NDArray[np.int64]:
        """Global indices of the block laid out in its shape (C order)."""
        return np.arange(self.start, self.stop, dtype=np.int64).reshape(self.shape)

    def values(self, vector: FloatArray) -> FloatArray:
        """This block's slice of a full primal (or dual) vector, in its shape."""
        return np.asarray(vector[self.start : self.stop]).reshape(self.shape)


@dataclass(frozen=True)
class LinearProgram:
    """``sense`` c·x + offset subject to row_lower <= A x <= row_upper, col_lower <= x <= col_upper."""

    objective: FloatArray
    matrix: sp.csr_matrix
    row_lower: FloatArray
    row_upper: FloatArray
    col_lower: FloatArray
    col_upper: FloatArray
    integrality: npt.NDArray[np.bool_]
    sense: Sense = "max"
    offset: float = 0.0
    columns: dict[str, Block] = field(default_factory=dict)
    rows: dict[str, Block] = field(default_factory=dict)
    name: str = "fairpack"

    def __post_init__(self) -> None:
        m, n = self.matrix.shape
        for label, array, size in (
            ("objective", self.objective, n),
            ("col_lower", self.col_lower, n),
            ("col_upper", self.col_upper, n),
            ("integrality", self.integrality, n),
            ("row_lower", self.row_lower, m),
            ("row_upper", self.row_upper, m),
        ):
            if array.shape != (size,):
                raise ValueError(f"{label} has shape {array.shape}, expected ({size},)")

    @property
    def num_columns(self) -> int:
        return int(self.matrix.shape[1])

    @property
    def num_rows(self) -> int:
        return int(self.matrix.shape[0])

    @property
    def is_mip(self) -> bool:
        return bool(self.integrality.any())

    def evaluate(self, x: FloatArray) -> float:
        """Objective value of a primal vector, computed here rather than trusted from a solver."""
        return float(self.objective @ x + self.offset)

    def max_violation(self, x: FloatArray) -> float:
        """Largest absolute violation of any row or column bound by ``x``."""
        activity = self.matrix @ x
        violations = [
            np.max(self.row_lower - activity, initial=0.0),
            np.max(activity - self.row_upper, initial=0.0),
            np.max(self.col_lower - x, initial=0.0),
            np.max(x - self.col_upper, initial=0.0),
        ]
        return float(max(violations))

    def column_names(self) -> list[str]:
        return _names(self.columns, self.num_columns, "x")

    def row_names(self) -> list[str]:
        return _names(self.rows, self.num_rows, "r")

    def write(self, path: str | Path, file_format: Literal["mps", "lp"] | None = None) -> None:
        """Write the model as free MPS or CPLEX LP, chosen by ``file_format`` or the file suffix."""
        path = Path(path)
        chosen = file_format or ("lp" if path.suffix.lower() == ".lp" else "mps")
        path.write_text(self.to_mps() if chosen == "mps" else self.to_lp(), encoding="ascii")

    def to_mps(self) -> str:
        """Free-format MPS text; maximisation is written with OBJSENSE MAX."""
        col_names, row_names = self.column_names(), self.row_names()
        lines = [f"NAME {self.name}", "OBJSENSE", "    MAX" if self.sense == "max" else "    MIN"]
        lines += _mps_rows(self, row_names)
        lines += _mps_columns(self, col_names, row_names)
        lines += _mps_rhs_and_ranges(self, row_names)
        lines += _mps_bounds(self, col_names)
        lines.append("ENDATA")
        return "\n".join(lines) + "\n"

    def to_lp(self) -> str:
        """CPLEX LP format text."""
        col_names = self.column_names()
        row_names = self.row_names()

        def expression(indices: npt.NDArray[np.int64], values: FloatArray) -> str:
            terms = [
                f"{'+' if v >= 0 else '-'} {_num(abs(v))} {col_names[j]}" for j, v in zip(indices, values, strict=True)
            ]
            if not terms:
                return "0 " + col_names[0]
            # CPLEX-style readers cap line length (510 characters), so long rows continue on new lines.
            chunks = [terms[0]]
            for term in terms[1:]:
                if len(chunks[-1]) + 1 + len(term) > _LP_LINE_WIDTH:
                    chunks.append(term)
                else:
                    chunks[-1] += " " + term
            return "\n   ".join(chunks)

        # Columns in no row are listed in the objective (with cost 0 if need be) so that readers
        # that only learn variables from the objective and rows (CoinLpIO) still create them.
        unused = np.diff(self.matrix.tocsc().indptr) == 0
        nonzero = np.flatnonzero((self.objective != 0) | unused)
        lines = ["Maximize" if self.sense == "max" else "Minimize"]
        objective = expression(nonzero, self.objective[nonzero])
        if self.offset:
            objective += f" {'+' if self.offset >= 0 else '-'} {_num(abs(self.offset))}"
        lines.append(f" obj: {objective}")
        lines.append("Subject To")
        csr = self.matrix
        for i, name in enumerate(row_names):
            span = slice(csr.indptr[i], csr.indptr[i + 1])
            body = expression(csr.indices[span], csr.data[span])
            low, up = self.row_lower[i], self.row_upper[i]
            if low == up:
                lines.append(f" {name}: {body} = {_num(low)}")
            else:
                if low != -math.inf:
                    lines.append(f" {name}_lo: {body} >= {_num(low)}")
                if up != math.inf:
                    lines.append(f" {name}_up: {body} <= {_num(up)}")
        lines.append("Bounds")
        for j, name in enumerate(col_names):
            low, up = self.col_lower[j], self.col_upper[j]
            low_text = "-inf" if low == -math.inf else _num(low)
            up_text = "+inf" if up == math.inf else _num(up)
            lines.append(f" {low_text} <= {name} <= {up_text}")
        integers = [col_names[j] for j in np.flatnonzero(self.integrality)]
        if integers:
            lines.append("General")
            lines.extend(f" {name}" for name in integers)
        lines.append("End")
        return "\n".join(lines) + "\n"


_LP_LINE_WIDTH = 200  # characters of terms per line in LP files, well below readers' limits



def _mps_rows(lp: LinearProgram, row_names: list[str]) -> list[str]:
    lines = ["ROWS", " N obj"]
    for name, low, up in zip(row_names, lp.row_lower, lp.row_upper, strict=True):
        if low == -math.inf and up == math.inf:
            kind = "N"  # a free row; readers drop it (an L row here would read as <= 0)
        elif low == up:
            kind = "E"
        else:
            kind = "L" if low == -math.inf else "G"  # a ranged row is G with a RANGES entry
        lines.append(f" {kind} {name}")
    return lines


def _mps_columns(lp: LinearProgram, col_names: list[str], row_names: list[str]) -> list[str]:
    lines = ["COLUMNS"]
    csc = lp.matrix.tocsc()
    in_integer_block = False
    for j, name in enumerate(col_names):
        integer = bool(lp.integrality[j])
        if integer != in_integer_block:
            lines.append(f" MARKER{j} 'MARKER' '{'INTORG' if integer else 'INTEND'}'")
            in_integer_block = integer
        # A column with no entries at all still needs a line, or readers never learn it exists.
        if lp.objective[j] != 0 or csc.indptr[j] == csc.indptr[j + 1]:
            lines.append(f" {name} obj {_num(lp.objective[j])}")
        for k in range(csc.indptr[j], csc.indptr[j + 1]):
            lines.append(f" {name} {row_names[csc.indices[k]]} {_num(csc.data[k])}")
    if in_integer_block:
        lines.append(f" MARKER{lp.num_columns} 'MARKER' 'INTEND'")
    return lines


def _mps_rhs_and_ranges(lp: LinearProgram, row_names: list[str]) -> list[str]:
    lines = ["RHS"]
    if lp.offset:
        lines.append(f" rhs obj {_num(-lp.offset)}")
    ranges = []
    for name, low, up in zip(row_names, lp.row_lower, lp.row_upper, strict=True):
        if low == up or up == math.inf:
            if low != 0 and low != -math.inf:
                lines.append(f" rhs {name} {_num(low)}")
        elif low == -math.inf:
            if up != 0:
                lines.append(f" rhs {name} {_num(up)}")
        else:  # ranged row written as G with a range
            if low != 0:
                lines.append(f" rhs {name} {_num(low)}")
            ranges.append(f" rng {name} {_num(up - low)}")
    return lines + (["RANGES", *ranges] if ranges else [])


def _mps_bounds(lp: LinearProgram, col_names: list[str]) -> list[str]:
    lines = ["BOUNDS"]
    for j, name in enumerate(col_names):
        low, up = lp.col_lower[j], lp.col_upper[j]
        if low == -math.inf and up == math.inf:
            lines.append(f" FR bnd {name}")
        elif low == up:
            lines.append(f" FX bnd {name} {_num(low)}")
        else:
            if low == -math.inf:
                lines.append(f" MI bnd {name}")
            elif low != 0 or up < 0:
                # MPS readers (CPLEX, CoinMpsIO) read a negative UP without an LO as lower = -inf.
                lines.append(f" LO bnd {name} {_num(low)}")
            if up != math.inf:
                lines.append(f" UP bnd {name} {_num(up)}")
            elif lp.integrality[j]:
                lines.append(f" PL bnd {name}")
    return lines

def _num(value: float) -> str:
    return repr(float(value))


def _names(blocks: dict[str, Block], total: int, fallback: str) -> list[str]:
    names = [f"{fallback}{i}" for i in range(total)]
    for block in blocks.values():
        for flat, index in enumerate(np.ndindex(*block.shape) if block.shape else [()]):
            suffix = "_".join(str(k) for k in index)
            names[block.start + flat] = f"{block.name}_{suffix}" if suffix else block.name
    return names


class LPBuilder:
    """Reserve variable and row blocks, collect COO triplets, and build one CSR ``LinearProgram``."""

    def __init__(self, sense: Sense = "max", name: str = "fairpack") -> None:
        self.sense: Sense = sense
        self.name = name
        self._columns: dict[str, Block] = {}
        self._rows: dict[str, Block] = {}
        self._objective: list[FloatArray] = []
        self._col_lower: list[FloatArray] = []
        self._col_upper: list[FloatArray] = []
        self._integer: list[npt.NDArray[np.bool_]] = []
        self._row_lower: list[FloatArray] = []
        self._row_upper: list[FloatArray] = []
        self._coo_rows: list[npt.NDArray[np.int64]] = []
        self._coo_cols: list[npt.NDArray[np.int64]] = []
        self._coo_vals: list[FloatArray] = []
        self.num_columns = 0
        self.num_rows = 0
        self.offset = 0.0

    def add_variables(
        self,
        name: str,
        shape: tuple[int, ...],
        lower: float | FloatArray = 0.0,
        upper: float | FloatArray = math.inf,
        cost: float | FloatArray = 0.0,
        integer: bool = False,
    ) -> Block:
        """Reserve a block of variables with broadcastable bounds and objective coefficients."""
        if name in self._columns:
            raise ValueError(f"variable block {name!r} already exists")
        block = Block(name, self.num_columns, shape)
        size = block.size
        self._objective.append(np.broadcast_to(np.asarray(cost, dtype=np.float64), shape).reshape(size).copy())
        self._col_lower.append(np.broadcast_to(np.asarray(lower, dtype=np.float64), shape).reshape(size).copy())
        self._col_upper.append(np.broadcast_to(np.asarray(upper, dtype=np.float64), shape).reshape(size).copy())
        self._integer.append(np.full(size, integer, dtype=bool))
        self._columns[name] = block
        self.num_columns += size
        return block

    def add_rows(
        self,
        name: str,
        count: int,
        rows: npt.ArrayLike,
        cols: npt.ArrayLike,
        values: npt.ArrayLike,
        lower: float | FloatArray = -math.inf,
        upper: float | FloatArray = math.inf,
    ) -> Block:
        """Add ``count`` rows; ``rows`` are local (0..count-1), ``cols`` global column indices."""
        if name in self._rows:
            raise ValueError(f"row block {name!r} already exists")
        block = Block(name, self.num_rows, (count,))
        local = np.asarray(rows, dtype=np.int64).reshape(-1)
        if local.size and (local.min() < 0 or local.max() >= count):
            raise ValueError(f"row block {name!r}: local row index out of range")
        self._coo_rows.append(local + block.start)
        self._coo_cols.append(np.asarray(cols, dtype=np.int64).reshape(-1))
        self._coo_vals.append(np.broadcast_to(np.asarray(values, dtype=np.float64), local.shape).copy())
        self._row_lower.append(np.broadcast_to(np.asarray(lower, dtype=np.float64), (count,)).copy())
        self._row_upper.append(np.broadcast_to(np.asarray(upper, dtype=np.float64), (count,)).copy())
        self._rows[name] = block
        self.num_rows += count
        return block

    def build(self) -> LinearProgram:
        def concat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
            return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)

        matrix = sp.coo_matrix(
            (concat(self._coo_vals, np.float64), (concat(self._coo_rows, np.int64), concat(self._coo_cols, np.int64))),
            shape=(self.num_rows, self.num_columns),
        ).tocsr()
        matrix.sum_duplicates()
        matrix.eliminate_zeros()
        return LinearProgram(
            objective=concat(self._objective, np.float64),
            matrix=matrix,
            row_lower=concat(self._row_lower, np.float64),
            row_upper=concat(self._row_upper, np.float64),
            col_lower=concat(self._col_lower, np.float64),
            col_upper=concat(self._col_upper, np.float64),
            integrality=concat(self._integer, bool),
            sense=self.sense,
            offset=self.offset,
            columns=dict(self._columns),
            rows=dict(self._rows),
            name=self.name,
        )

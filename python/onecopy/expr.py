# SPDX-License-Identifier: Apache-2.0
"""Filter expressions built with Python operators, rendered as the SQL that onecopy parses.

    from onecopy import col, lit
    pred = (col("score") > 0.5) & col("tag").isin(["a", "b"]) & ~col("user.name").is_null()
    str(pred)  # 'score > 0.5 AND tag IN (\\'a\\', \\'b\\') AND NOT user.name IS NULL'
    pa.table(f.scan(filter=pred))

The grammar is format/expr.hpp's; this module only builds text for it, so anything it renders
the C++ parser accepts, and binding errors (unknown columns, type mismatches) come back from the
scan. Expressions are not truth values: `bool(expr)` raises TypeError, so `a < b < c` and
`and`/`or` (instead of `&`/`|`) fail loudly rather than silently dropping a condition.
"""

from __future__ import annotations

import datetime as _dt
import math
import numbers
import re
from typing import Iterable, Sequence, Union

__all__ = ["Expr", "col", "lit"]

# format/expr.cpp is_keyword: these need quoting as identifiers (compared case-insensitively).
_KEYWORDS = frozenset(["AND", "OR", "NOT", "IS", "NULL", "IN", "BETWEEN", "LIKE", "TRUE", "FALSE",
                       "DATE", "TIMESTAMP"])
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_INT_MIN, _UINT_MAX = -(2**63), 2**64 - 1

# Binding strength, as in format/expr.cpp: a child weaker than its position requires gets
# parentheses. Predicates take atoms (columns, literals) as operands.
_OR, _AND, _NOT, _PREDICATE, _ATOM = 1, 2, 3, 4, 5


def _quote(s: str, q: str) -> str:
    return q + s.replace(q, q + q) + q


def _identifier(name: str) -> str:
    plain = _PLAIN.match(name) and name.upper() not in _KEYWORDS
    return name if plain else _quote(name, '"')


def _timestamp_text(v: _dt.datetime) -> str:
    if v.tzinfo is not None and v.utcoffset() is not None:
        v = v.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return f"{v.year:04d}-{v.month:02d}-{v.day:02d} {v.hour:02d}:{v.minute:02d}:{v.second:02d}.{v.microsecond:06d}"


def _literal_sql(v: object) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, numbers.Integral):
        i = int(v)
        if not _INT_MIN <= i <= _UINT_MAX:
            raise ValueError(f"integer literal {i} is outside the 64-bit range")
        return str(i)
    if isinstance(v, numbers.Real):
        f = float(v)
        if not math.isfinite(f):
            raise ValueError(f"float literal {f!r} has no SQL spelling (the grammar has no inf/nan)")
        return repr(f)  # always carries '.' or an exponent, so it reads back as a float
    if isinstance(v, str):
        return _quote(v, "'")
    if isinstance(v, _dt.datetime):  # before date: datetime is a date subclass
        return f"TIMESTAMP '{_timestamp_text(v)}'"
    if isinstance(v, _dt.date):
        return f"DATE '{v.year:04d}-{v.month:02d}-{v.day:02d}'"
    raise TypeError(f"cannot use {type(v).__name__} {v!r} as a filter literal")


def _wrap(v: object) -> "Expr":
    return v if isinstance(v, Expr) else lit(v)


class Expr:
    """A node of a filter expression; build with `col`, `lit` and operators, render with str()."""

    __slots__ = ("_sql", "_prec", "_kind", "_parts")
    __hash__ = None  # == builds an expression, so expressions cannot be dict keys

    def __init__(self, sql: str, prec: int, kind: str = "", parts: tuple = ()):
        self._sql, self._prec, self._kind, self._parts = sql, prec, kind, parts

    def __str__(self) -> str:
        return self._sql

    def __repr__(self) -> str:
        return f"Expr({self._sql!r})"

    def __bool__(self):
        raise TypeError("a filter expression has no truth value: use & | ~ instead of and/or/not, "
                        "and split chained comparisons (a < b < c) with &")

    def _operand(self, min_prec: int) -> str:
        return f"({self._sql})" if self._prec < min_prec else self._sql

    # ---- comparisons (Python reflects `3 < col("x")` into `col("x") > 3`) -------------------
    def _compare(self, op: str, other: object) -> "Expr":
        rhs = _wrap(other)
        return Expr(f"{self._operand(_ATOM)} {op} {rhs._operand(_ATOM)}", _PREDICATE)

    def __eq__(self, other):  # type: ignore[override]
        return self._compare("=", other)

    def __ne__(self, other):  # type: ignore[override]
        return self._compare("!=", other)

    def __lt__(self, other):
        return self._compare("<", other)

    def __le__(self, other):
        return self._compare("<=", other)

    def __gt__(self, other):
        return self._compare(">", other)

    def __ge__(self, other):
        return self._compare(">=", other)

    # ---- boolean connectives; AND/OR chains flatten like the C++ printer's n-ary nodes ------
    def _connect(self, kind: str, other: object) -> "Expr":
        if not isinstance(other, Expr):
            raise TypeError(f"{kind} needs filter expressions on both sides, got {type(other).__name__}")
        prec = _AND if kind == "AND" else _OR
        parts = [*(self._parts if self._kind == kind else (self,)),
                 *(other._parts if other._kind == kind else (other,))]
        sql = f" {kind} ".join(p._operand(prec + 1) for p in parts)
        return Expr(sql, prec, kind, tuple(parts))

    def __and__(self, other):
        return self._connect("AND", other)

    def __or__(self, other):
        return self._connect("OR", other)

    def __invert__(self) -> "Expr":
        return Expr(f"NOT {self._operand(_NOT)}", _NOT)

    # ---- predicates --------------------------------------------------------------------------
    def is_null(self) -> "Expr":
        return Expr(f"{self._operand(_ATOM)} IS NULL", _PREDICATE)

    def is_not_null(self) -> "Expr":
        return Expr(f"{self._operand(_ATOM)} IS NOT NULL", _PREDICATE)

    def isin(self, values: Iterable[object]) -> "Expr":
        items = [_wrap(v) for v in values]
        if not items:
            raise ValueError("isin() needs at least one value")
        if any(i._kind != "literal" for i in items):
            raise TypeError("isin() takes literal values only")
        return Expr(f"{self._operand(_ATOM)} IN ({', '.join(i._sql for i in items)})", _PREDICATE)

    def between(self, lo: object, hi: object) -> "Expr":
        lo_e, hi_e = _wrap(lo), _wrap(hi)
        return Expr(f"{self._operand(_ATOM)} BETWEEN {lo_e._operand(_ATOM)} AND {hi_e._operand(_ATOM)}",
                    _PREDICATE)

    def startswith(self, prefix: str) -> "Expr":
        if not isinstance(prefix, str):
            raise TypeError("startswith() takes a str")
        if "%" in prefix or "_" in prefix:
            raise ValueError(f"startswith({prefix!r}): the LIKE grammar has no escapes, so a prefix "
                             "cannot contain % or _")
        return Expr(f"{self._operand(_ATOM)} LIKE {_quote(prefix + '%', chr(39))}", _PREDICATE)


def col(name: Union[str, Sequence[str]]) -> Expr:
    """A column: "a.b" is field b of struct column a; pass ["a.b", "c"] for names holding dots."""
    path = name.split(".") if isinstance(name, str) else list(name)
    if not path or any(not isinstance(p, str) or not p for p in path):
        raise ValueError(f"col({name!r}): a column path needs non-empty str components")
    return Expr(".".join(_identifier(p) for p in path), _ATOM, "column")


def lit(value: object) -> Expr:
    """A literal: None, bool, int, float (finite), str, datetime.date or datetime.datetime
    (tz-aware values are converted to UTC)."""
    if isinstance(value, Expr):
        raise TypeError("lit() takes a Python value, not an expression")
    return Expr(_literal_sql(value), _ATOM, "literal")

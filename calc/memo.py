"""Memoization for the engine's pure functions of immutable inputs.

The planner asks the same questions thousands of times: a 1,024-GPU plan of Llama 3 70B prices 4,156
collectives of which 70 differ, and sizes the same layer's activations for every layout that shares its
micro-batch and degrees. [`memoized`][calc.memo.memoized] keeps the answers of a function whose result depends on
its arguments alone and is itself immutable (a frozen dataclass, a tuple, a number, a string), so a cached answer
cannot be changed by whoever receives it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["hash_fields_once", "memoized", "state_without_hash"]

F = TypeVar("F", bound=Callable[..., Any])


def memoized(maxsize: int = 4096) -> Callable[[F], F]:
    """Decorate a pure function of hashable arguments: its last ``maxsize`` answers are kept (least recently used
    first out).

    An argument that cannot be hashed (a list where a tuple was meant) is passed to the function uncached, so the
    function's own validation answers it, as it would undecorated. Errors are never cached. ``cache_clear`` and
    ``cache_info`` are those of ``functools.lru_cache``.

    Examples:
        >>> calls = []
        >>> @memoized(maxsize=8)
        ... def square(x):
        ...     calls.append(x)
        ...     return x * x
        >>> square(3), square(3), len(calls)
        (9, 9, 1)
        >>> @memoized()
        ... def total(xs):
        ...     return sum(xs)
        >>> total([1, 2]), total((1, 2)), total.cache_info().currsize   # the list is answered uncached
        (3, 3, 1)
    """

    def wrap(fn: F) -> F:
        cached = functools.lru_cache(maxsize=maxsize)(fn)

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return cached(*args, **kwargs)
            except TypeError as err:
                if "unhashable" not in str(err):
                    raise
                return fn(*args, **kwargs)

        call.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
        call.cache_info = cached.cache_info  # type: ignore[attr-defined]
        return call  # type: ignore[return-value]

    return wrap


def hash_fields_once(self: Any) -> int:
    """A frozen dataclass's ``__hash__``: its fields' hash, computed on first use and kept on the instance.

    The memos above hash their arguments on every call; a model or a network has dozens of fields, some of them
    ``Fraction``s, whose hash is a modular inverse. Set ``__hash__ = hash_fields_once`` in the class body (an explicit
    ``__hash__`` is one ``dataclass`` keeps) and ``__getstate__ = state_without_hash``.

    Examples:
        >>> @dataclasses.dataclass(frozen=True)
        ... class P:
        ...     x: int
        ...     __hash__ = hash_fields_once
        ...     __getstate__ = state_without_hash
        >>> hash(P(1)) == hash(P(1)) == hash((1,)), P(1) == P(1)
        (True, True)
    """
    cached = self.__dict__.get("_hash")
    if cached is None:
        cached = hash(tuple(getattr(self, f.name) for f in dataclasses.fields(self)))
        object.__setattr__(self, "_hash", cached)
    return cached


def state_without_hash(self: Any) -> dict[str, Any]:
    """What pickles of an instance: its ``__dict__`` without [`hash_fields_once`][calc.memo.hash_fields_once]'s
    kept hash (a string's hash differs from one process to the next)."""
    return {k: v for k, v in self.__dict__.items() if k != "_hash"}

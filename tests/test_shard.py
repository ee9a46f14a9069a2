"""``--lc-shard`` (tests/conftest.py): the shards partition the selected tests; a ``one_shard`` module stays whole."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from conftest import SHARD_OPTION, _shard


class _Item:
    def __init__(self, nodeid: str, whole: bool) -> None:
        self.nodeid = nodeid
        self._whole = whole

    def get_closest_marker(self, name: str):
        return object() if name == "one_shard" and self._whole else None


def _items() -> list[_Item]:
    out = [_Item(f"tests/test_a.py::test_{i}", False) for i in range(5)]
    out += [_Item(f"tests/test_rank.py::test_{i}", True) for i in range(4)]
    return out + [_Item(f"tests/test_b.py::test_{i}", False) for i in range(5)]


def _run(spec: str) -> tuple[list[str], list[str]]:
    deselected: list[str] = []
    config = SimpleNamespace(
        getoption=lambda name: spec if name == SHARD_OPTION else None,
        hook=SimpleNamespace(pytest_deselected=lambda items: deselected.extend(i.nodeid for i in items)),
    )
    items = _items()
    _shard(config, items)
    return [i.nodeid for i in items], deselected


@pytest.mark.parametrize("n", [1, 2, 3])
def test_shards_partition_the_tests_and_keep_a_one_shard_module_whole(n: int) -> None:
    every = [i.nodeid for i in _items()]
    shards = [_run(f"{k}/{n}") for k in range(n)]
    kept = [nodeid for got, _ in shards for nodeid in got]
    assert sorted(kept) == sorted(every)  # each test in exactly one shard
    for got, deselected in shards:
        assert sorted(got + deselected) == sorted(every)
    holding = [k for k, (got, _) in enumerate(shards) if any("test_rank.py" in x for x in got)]
    assert len(holding) == 1  # the module fixture is computed once
    assert sum("test_rank.py" in x for x in shards[holding[0]][0]) == 4
    others = [sum("test_rank.py" not in x for x in got) for got, _ in shards]
    assert max(others) - min(others) <= 2  # the rest are still dealt round-robin

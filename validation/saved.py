"""Counting the bytes autograd saves for backward, storage by storage, and where they were saved.

``torch.autograd.graph.saved_tensors_hooks`` sees every tensor a forward pass saves for its backward
pass (PyTorch docs, "Hooks for saved tensors"). Several saved tensors can be views of one storage
(a transpose, a slice, the same tensor saved by two operations); each storage is counted once, at
its full size, in the module scope where it was first saved. Parameters and buffers are not
activations and are left out.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

import torch

__all__ = ["SavedBytes"]


class SavedBytes:
    """Bytes saved for backward, by scope (the innermost named module running when first saved).

    Examples:
        >>> counter = SavedBytes()
        >>> x = torch.ones(4, requires_grad=True)
        >>> with counter.recording():
        ...     y = (x * x).sum()
        >>> counter.total
        16
    """

    def __init__(self, exclude: list[torch.Tensor] | None = None) -> None:
        self._exclude = {t.untyped_storage().data_ptr() for t in exclude or []}
        self._seen: dict[int, tuple[str, int, str, tuple[int, ...]]] = {}
        self._keep: list[torch.Tensor] = []
        self.scope = "other"

    def _pack(self, t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        ptr = storage.data_ptr()
        if ptr and ptr not in self._exclude and ptr not in self._seen:
            self._seen[ptr] = (self.scope, storage.nbytes(), str(t.dtype), tuple(t.shape))
            self._keep.append(t)
        return t

    @contextmanager
    def recording(self):
        """Record inside this block."""
        with torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t):
            yield self

    def watch(self, module: torch.nn.Module, name: str) -> None:
        """Attribute what is saved while ``module`` runs to ``name`` (restoring the outer scope after)."""
        stack: list[str] = []

        def pre(_m: Any, _args: Any) -> None:
            stack.append(self.scope)
            self.scope = name

        def post(_m: Any, _args: Any, _out: Any) -> None:
            self.scope = stack.pop()

        module.register_forward_pre_hook(pre)
        module.register_forward_hook(post)

    def by_scope(self) -> dict[str, int]:
        """Bytes per scope."""
        out: dict[str, int] = {}
        for scope, nbytes, _dtype, _shape in self._seen.values():
            out[scope] = out.get(scope, 0) + nbytes
        return out

    def tensors(self, scope: str) -> list[tuple[int, str, tuple[int, ...]]]:
        """The storages first saved in ``scope``: (bytes, dtype, shape of the saved view)."""
        return [(n, d, s) for sc, n, d, s in self._seen.values() if sc == scope]

    @property
    def total(self) -> int:
        """All counted bytes."""
        return sum(n for _s, n, _d, _sh in self._seen.values())

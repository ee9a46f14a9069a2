"""Each pipeline schedule's per-stage order of passes, the input of the simulation in
[`calc.parallel.pipeline_schedules`][calc.parallel.pipeline_schedules].

A stage's order is a list of tasks; a task is one pass ``(kind, microbatch, chunk on this device,
model stage g)``, or two passes run together (DualPipe's overlapped forward-and-backward). GPipe:
Huang et al. 2019 (arXiv:1811.06965); 1F1B and interleaved 1F1B: Narayanan et al. 2021
(arXiv:2104.04473) Sec. 2.2; ZB-H1: Qi et al. 2023 (arXiv:2401.10241) Sec. 2.1; DualPipe: DeepSeek-V3
report (arXiv:2412.19437) Sec. 3.2.1.
"""

from __future__ import annotations

__all__: list[str] = []

# A pass in a stage's order: (kind, microbatch, chunk on this device, model stage g). A task is one pass,
# or two passes run together (DualPipe's overlapped forward-and-backward).
_Pass = tuple[str, int, int, int]


def _gpipe(stage: int, p: int, m: int) -> list[tuple[_Pass, ...]]:
    return [(("F", j, 0, stage),) for j in range(m)] + [(("B", j, 0, stage),) for j in range(m)]


def _one_f_one_b(stage: int, p: int, m: int) -> list[tuple[_Pass, ...]]:
    warmup = min(p - stage - 1, m)
    order = [(("F", j, 0, stage),) for j in range(warmup)]
    for j in range(m - warmup):
        order += [(("F", warmup + j, 0, stage),), (("B", j, 0, stage),)]
    return order + [(("B", j, 0, stage),) for j in range(m - warmup, m)]


def _interleaved(stage: int, p: int, m: int, v: int) -> list[tuple[_Pass, ...]]:
    # Megatron-LM's forward_backward_pipelining_with_interleaving: virtual micro-batch k runs chunk
    # (k // p) % v of micro-batch (k // (p v)) p + k % p; warm-up is 2 (p - stage - 1) + (v - 1) p
    # forwards; backwards visit the chunks in reverse. Chunk c of this device is model stage c p + stage.
    total = m * v

    def forward(k: int) -> tuple[_Pass, ...]:
        chunk = (k % (p * v)) // p
        return (("F", (k // (p * v)) * p + k % p, chunk, chunk * p + stage),)

    def backward(k: int) -> tuple[_Pass, ...]:
        chunk = v - 1 - (k % (p * v)) // p
        return (("B", (k // (p * v)) * p + k % p, chunk, chunk * p + stage),)

    warmup = min(2 * (p - stage - 1) + (v - 1) * p, total)
    order = [forward(k) for k in range(warmup)]
    for k in range(total - warmup):
        order += [forward(warmup + k), backward(k)]
    return order + [backward(k) for k in range(total - warmup, total)]


def _zb_h1(stage: int, p: int, m: int) -> list[tuple[_Pass, ...]]:
    # Qi et al. 2023 Sec. 2.1 (Fig. 3, ZB-H1): 1F1B's order of F and B (input gradients only), with each
    # W pass run one step after its B on every stage, and stage i deferring i of them to its
    # cool-down, where they fill the bubble 1F1B leaves there. In-flight forwards stay 1F1B's.
    warmup = min(p - stage - 1, m)
    order: list[tuple[_Pass, ...]] = [(("F", j, 0, stage),) for j in range(warmup)]
    pending: list[int] = []

    def weight() -> None:
        order.append((("W", pending.pop(0), 0, stage),))

    for j in range(m - warmup):
        order.append((("F", warmup + j, 0, stage),))
        if len(pending) > stage:
            weight()
        order.append((("B", j, 0, stage),))
        pending.append(j)
    for j in range(m - warmup, m):
        if len(pending) > stage:
            weight()
        order.append((("B", j, 0, stage),))
        pending.append(j)
    while pending:
        weight()
    return order


def _dualpipe(rank: int, p: int, m: int) -> list[tuple[_Pass, ...]]:
    # DeepSeek-V3 report Sec. 3.2.1, Fig. 5, as DeepSeek's reference DualPipe runs it: micro-batches
    # 0..m/2-1 enter at rank 0 (direction 0), m/2..m-1 at rank p-1 (direction 1); each rank holds the
    # model stage `rank` for direction 0 (chunk 0) and stage p-1-rank for direction 1 (chunk 1).
    # The eight steps below name passes by *phase*: phase 0 is the direction that enters on this
    # half of the ranks. Some backwards split off their W (queued, run later in order).
    half, h = p // 2, min(rank, p - 1 - rank)
    half_m = m // 2
    middle = rank in (half - 1, half)
    direction = (0, 1) if rank < half else (1, 0)  # phase -> direction
    nf = [0, 0]
    nb = [0, 0]
    queue: list[_Pass] = []
    order: list[tuple[_Pass, ...]] = []

    def _pass(kind: str, phase: int, counter: list[int]) -> _Pass:
        d = direction[phase]
        j = counter[phase]
        counter[phase] += 1
        return (kind, j + d * half_m, d, rank if d == 0 else p - 1 - rank)

    def fwd(phase: int) -> _Pass:
        return _pass("F", phase, nf)

    def bwd(phase: int, split: bool) -> _Pass:
        op = _pass("B", phase, nb)
        if split:
            queue.append(("W", *op[1:]))
        return op

    def weight() -> None:
        order.append((queue.pop(0),))

    for _ in range(2 * (half - h - 1)):  # step 1: forwards of phase 0
        order.append((fwd(0),))
    for _ in range(h + 1):  # step 2: a forward of each phase
        order += [(fwd(0),), (fwd(1),)]
    for _ in range(half - h - 1):  # step 3: B, W, F of phase 1 (zero bubble)
        order.append((bwd(1, True),))
        weight()
        order.append((fwd(1),))
    for i in range(half_m - p + h + 1):  # step 4: overlapped F0 & B1, then F1 & B0
        if i == 0 and middle:  # the middle ranks do not overlap the first pair
            order += [(fwd(0),), (bwd(1, False),)]
        else:
            order.append((fwd(0), bwd(1, False)))
        order.append((fwd(1), bwd(0, False)))
    for _ in range(half - h - 1):  # step 5: B1, then overlapped F1 & B0
        order.append((bwd(1, False),))
        order.append((fwd(1), bwd(0, False)))
    split = False
    for i in range(h + 1):  # step 6: B1, B0; the second half split off their W
        if i == (h + 1) // 2 and h % 2 == 1:
            split = True
        order.append((bwd(1, split),))
        if i == (h + 1) // 2 and h % 2 == 0:
            split = True
        order.append((bwd(0, split),))
    for _ in range(half - h - 1):  # step 7: W, then B of phase 0 (zero bubble)
        weight()
        order.append((bwd(0, True),))
    while queue:  # step 8: the remaining W
        weight()
    return order


def stage_orders(p: int, m: int, name: str, v: int) -> list[list[tuple[_Pass, ...]]]:
    """Every stage's order of passes for schedule ``name`` (checked inputs).

    Examples:
        >>> [t[0][0] for t in stage_orders(2, 2, "1f1b", 1)[0]]
        ['F', 'F', 'B', 'B']
    """
    return [stage_order(p, m, name, v, i) for i in range(p)]


def stage_order(p: int, m: int, name: str, v: int, stage: int) -> list[tuple[_Pass, ...]]:
    """Stage ``stage``'s order of passes for schedule ``name`` (checked inputs): one row of
    [`stage_orders`][calc.parallel.pipeline_orders.stage_orders], without building the others.

    Examples:
        >>> stage_order(2, 2, "1f1b", 1, 1) == stage_orders(2, 2, "1f1b", 1)[1]
        True
    """
    if name == "gpipe":
        return _gpipe(stage, p, m)
    if name == "1f1b":
        return _one_f_one_b(stage, p, m)
    if name == "interleaved":
        return _interleaved(stage, p, m, v)
    if name == "zb-h1":
        return _zb_h1(stage, p, m)
    return _dualpipe(stage, p, m)

"""The confidence interval the streaming benchmark prints for its median CPU ratios."""

from __future__ import annotations

import random

import pytest

from benchmarks.streaming import median_interval


def test_the_interval_is_the_order_statistics_the_binomial_gives() -> None:
    # n = 15: (x_(4), x_(12)) covers 96.5 %, (x_(5), x_(11)) only 88.2 %
    assert median_interval([float(x) for x in range(15, 0, -1)]) == (4.0, 12.0)
    # n = 45: (x_(17), x_(29)) covers 92.8 %, (x_(18), x_(28)) 86.5 %
    assert median_interval([float(x) for x in range(1, 46)]) == (17.0, 29.0)
    # too few values for anything narrower than the whole range
    assert median_interval([2.0, 1.0, 3.0]) == (1.0, 3.0)
    assert median_interval([5.0]) == (5.0, 5.0)


def test_the_interval_covers_a_known_median_at_least_as_often_as_it_says() -> None:
    rng = random.Random(7)
    trials = 3000
    for n in (8, 15, 30):
        hits = 0
        for _ in range(trials):
            lo, hi = median_interval([rng.lognormvariate(0.0, 0.5) for _ in range(n)])  # median 1.0
            hits += lo <= 1.0 <= hi
        # at least 90 %, less 4.5 standard errors of 3000 trials (0.025): the
        # middle half (x_(n/4), x_(3n/4)) would cover about 50-80 %
        assert 0.875 <= hits / trials < 0.999, (n, hits / trials)


def test_no_values_is_an_error() -> None:
    with pytest.raises(ValueError):
        median_interval([])


# The instruction-count benchmark: what it reads of callgrind's dumps, and its fit.


def test_a_dump_is_read_by_the_client_request_that_wrote_it(tmp_path) -> None:
    from benchmarks.kernel_instructions import read_dumps

    # the lines callgrind 3.19 writes at the head of a dump (its summary line reads 0 there)
    (tmp_path / "callgrind.out.41.1").write_text(
        "version: 1\ncreator: callgrind-3.19.0\npid: 41\ncmd:  python -m ipykernel_launcher\npart: 1\n\n"
        "desc: I1 cache: \ndesc: Timerange: Basic block 0 - 9\ndesc: Trigger: Client Request: noui-5\n\n"
        "positions: line\nevents: Ir\nsummary: 0\n\nfn=(1) main\n0 1000\n\ntotals: 509876543\n"
    )
    (tmp_path / "callgrind.out.41").write_text("desc: Trigger: Program termination\nsummary: 0\ntotals: 0\n")
    assert read_dumps(tmp_path) == {"noui-5": 509_876_543}


def test_the_fit_splits_what_nb_hitl_adds_into_a_reply_and_a_message() -> None:
    from benchmarks.kernel_instructions import added_fit

    base = 500e6
    runs = []
    for messages in (60, 70, 15, 18):  # 2 M a reply + 0.5 M a message, over two paces
        runs += [
            {"kind": "noui", "ir": base},
            {"kind": "nbhitl", "ir": base + 2e6 + 0.5e6 * messages, "messages": messages},
        ]
    fixed, per_message = added_fit(runs, "nbhitl")
    assert fixed == pytest.approx(2e6) and per_message == pytest.approx(0.5e6)
    # one message count: no line through it
    assert added_fit(runs[:2], "nbhitl") is None

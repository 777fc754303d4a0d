"""The delivery component under every sink: batches, backpressure, drops by reason, retries put back
at the head, flushes that wait only for what came before, and shutdown deadlines kept."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

import pytest

from otel_traj.delivery import Delivery, Retry, WhenFull, backoff_delay
from otel_traj.stats import PipelineStats

WAIT_S = 10


class Consumer:
    """Records the batches it is handed; ``hold`` keeps it inside ``deliver`` until released."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.entered = threading.Semaphore(0)
        self.release = threading.Event()
        self.release.set()
        self.retry_once: set[int] = set()
        self.fail_on: set[int] = set()
        self.gate: threading.Semaphore | None = None  # when set, one permit per batch

    def deliver(self, batch: list[int]) -> Retry[int] | None:
        self.entered.release()
        assert self.release.wait(WAIT_S)
        if self.gate is not None:
            assert self.gate.acquire(timeout=WAIT_S)
        if self.fail_on.intersection(batch):
            raise RuntimeError("a bug in a sink")
        again = [i for i in batch if i in self.retry_once]
        self.retry_once -= set(again)
        self.batches.append([i for i in batch if i not in again])
        return Retry(again, 0.0) if again else None

    @property
    def delivered(self) -> list[int]:
        return [i for batch in self.batches for i in batch]


@pytest.fixture
def consumer() -> Consumer:
    return Consumer()


@pytest.fixture
def make(consumer: Consumer) -> Iterator[type[Delivery[int]]]:
    made: list[Delivery[int]] = []

    def build(**kwargs: object) -> Delivery[int]:
        settings: dict[str, object] = {
            "name": "test",
            "deliver": consumer.deliver,
            "stats": PipelineStats(),
            "max_queue": 100,
            "batch_size": 10,
            "when_full": "drop_oldest",
        }
        settings.update(kwargs)
        delivery: Delivery[int] = Delivery(**settings)  # type: ignore[arg-type]
        made.append(delivery)
        return delivery

    yield build  # type: ignore[misc]
    consumer.release.set()
    if consumer.gate is not None:
        consumer.gate.release(100)
    for delivery in made:
        delivery.shutdown(timeout_millis=WAIT_S * 1000)


def test_items_are_delivered_in_order_in_batches(make: type[Delivery[int]], consumer: Consumer) -> None:
    consumer.release.clear()
    delivery = make(batch_size=4)
    delivery.put(0)
    assert consumer.entered.acquire(timeout=WAIT_S)  # the first item went alone, at once
    delivery.put_all(range(1, 10))
    consumer.release.set()
    assert delivery.force_flush()
    assert consumer.delivered == list(range(10))
    assert [len(b) for b in consumer.batches] == [1, 4, 4, 1]
    assert delivery.pending == 0


@pytest.mark.parametrize(("when_full", "kept"), [("drop_oldest", [0, 3, 4]), ("drop_newest", [0, 1, 2])])
def test_a_full_queue_drops_by_its_rule_and_counts(
    make: type[Delivery[int]], consumer: Consumer, when_full: WhenFull, kept: list[int]
) -> None:
    consumer.release.clear()
    stats = PipelineStats()
    delivery = make(max_queue=2, batch_size=1, when_full=when_full, stats=stats)
    delivery.put(0)
    assert consumer.entered.acquire(timeout=WAIT_S)
    delivery.put_all([1, 2, 3, 4])
    assert stats.snapshot().dropped == {"test_queue_full": 2}
    assert stats.snapshot().queued == {"test": 3}  # two waiting, one in the consumer's hands
    consumer.release.set()
    assert delivery.force_flush()
    assert consumer.delivered == kept


def test_a_blocking_queue_makes_the_producer_wait_until_there_is_room(
    make: type[Delivery[int]], consumer: Consumer
) -> None:
    consumer.release.clear()
    delivery = make(max_queue=1, batch_size=1, when_full="block")
    delivery.put_all([0, 1])
    assert consumer.entered.acquire(timeout=WAIT_S)
    producer = threading.Thread(target=delivery.put, args=(2,))
    producer.start()
    producer.join(0.2)
    assert producer.is_alive(), "put returned although the queue was full"
    consumer.release.set()
    producer.join(WAIT_S)
    assert not producer.is_alive()
    assert delivery.force_flush()
    assert consumer.delivered == [0, 1, 2]


def test_a_retry_goes_back_to_the_head_and_a_flush_waits_for_it(
    make: type[Delivery[int]], consumer: Consumer
) -> None:
    consumer.retry_once = {1, 2}
    delivery = make(batch_size=3)
    consumer.release.clear()
    delivery.put_all([0, 1, 2])
    assert consumer.entered.acquire(timeout=WAIT_S)
    delivery.put_all([3, 4])
    consumer.release.set()
    assert delivery.force_flush()
    assert consumer.batches == [[0], [1, 2, 3], [4]]


def test_a_flush_waits_only_for_what_was_put_before_it(make: type[Delivery[int]], consumer: Consumer) -> None:
    """Under a steady stream a flush returns once its own items are out, not when the queue is empty."""
    consumer.gate = threading.Semaphore(0)
    delivery = make(batch_size=1)
    delivery.put_all([0, 1])
    flushed = threading.Event()
    flusher = threading.Thread(target=lambda: delivery.force_flush(WAIT_S * 1000) and flushed.set())
    flusher.start()
    delivery.put_all([2, 3])
    consumer.gate.release(2)
    flusher.join(WAIT_S)
    assert flushed.is_set()
    assert consumer.delivered == [0, 1]
    assert delivery.pending == 2
    consumer.gate.release(2)
    assert delivery.force_flush()


def test_a_consumer_that_raises_loses_only_its_batch_counted(
    make: type[Delivery[int]], consumer: Consumer
) -> None:
    stats = PipelineStats()
    consumer.fail_on = {1}
    delivery = make(batch_size=1, stats=stats)
    delivery.put_all([0, 1, 2])
    assert delivery.force_flush()
    assert consumer.delivered == [0, 2]
    snapshot = stats.snapshot()
    assert (snapshot.dropped, snapshot.internal_errors) == ({"test": 1}, 1)


def test_stale_items_expire_at_the_head(make: type[Delivery[int]], consumer: Consumer) -> None:
    consumer.release.clear()
    stats = PipelineStats()
    delivery = make(batch_size=1, stale=lambda item: item < 3, stats=stats)
    delivery.put(5)
    assert consumer.entered.acquire(timeout=WAIT_S)
    delivery.put_all([1, 2, 6])
    consumer.release.set()
    assert delivery.force_flush()
    assert consumer.delivered == [5, 6]
    assert stats.snapshot().dropped == {"test_expired": 2}


@pytest.mark.parametrize(("abandon", "lost"), [(False, 2), (True, 3)])
def test_shutdown_keeps_its_deadline_and_counts_what_is_left(
    make: type[Delivery[int]], consumer: Consumer, abandon: bool, lost: int
) -> None:
    consumer.release.clear()
    stats = PipelineStats()
    dropped: list[tuple[Sequence[int], str]] = []
    delivery = make(
        batch_size=1,
        stats=stats,
        abandon_in_flight=abandon,
        on_drop=lambda items, reason: dropped.append((list(items), reason)),
    )
    delivery.put_all([0, 1, 2])
    assert consumer.entered.acquire(timeout=WAIT_S)
    stopper = threading.Thread(target=delivery.shutdown, kwargs={"timeout_millis": 50})
    stopper.start()
    stopper.join(WAIT_S)
    assert not stopper.is_alive(), "shutdown waited past its deadline"
    assert sum(len(items) for items, reason in dropped if reason == "shutdown") == lost
    assert delivery.abandoned
    delivery.put(9)
    assert dropped[-1] == ([9], "closed")
    consumer.release.set()
    assert delivery.wait_stopped(WAIT_S)
    assert consumer.delivered == [0]  # the batch in hand finished; nothing more was taken


def test_linger_holds_a_partial_batch_until_a_flush(make: type[Delivery[int]], consumer: Consumer) -> None:
    delivery = make(batch_size=10, linger_s=3600.0)
    delivery.put_all([0, 1])
    assert not consumer.entered.acquire(timeout=0.1)
    assert delivery.force_flush()
    assert consumer.batches == [[0, 1]]


def test_settings_are_checked() -> None:
    stats = PipelineStats()
    for bad in ({"max_queue": 0}, {"batch_size": 0}, {"linger_s": float("nan")}):
        settings: dict[str, object] = {"max_queue": 1, "batch_size": 1, "linger_s": 0.0, **bad}
        with pytest.raises(ValueError, match=next(iter(bad))):
            Delivery(
                name="x",
                deliver=lambda batch: None,
                stats=stats,
                when_full="block",
                **settings,  # type: ignore[arg-type]
            )


def test_backoff_grows_is_capped_and_honours_the_servers_wait() -> None:
    assert 0.5 <= backoff_delay(0, 1.0, 30.0) <= 1.0
    assert 15.0 <= backoff_delay(10, 1.0, 30.0) <= 30.0
    assert 15.0 <= backoff_delay(10**6, 1.0, 30.0) <= 30.0
    assert backoff_delay(0, 1.0, 30.0, at_least_s=120.0) == 120.0

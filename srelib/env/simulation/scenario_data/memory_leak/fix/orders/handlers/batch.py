"""Batch order processing.

The nightly importer and the bulk-checkout API submit thousands of orders at once. Writing
them one by one saturates the orders table, so BatchProcessor persists them in batches of
``batch_size`` and sends one notification per order. Orders are held in an in-memory cache
keyed by id: a resubmission of a pending order (client retries are common) replaces it instead
of being written twice, and ``get`` answers for pending orders without a storage round trip.
"""

from __future__ import annotations

from typing import Iterable

from orders.models import Order
from orders.notifier import Notifier
from orders.storage import OrderStore


class BatchProcessor:
    """Persist orders in batches of ``batch_size``; notify once per persisted order."""

    def __init__(self, store: OrderStore, notifier: Notifier, batch_size: int = 50) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.store = store
        self.notifier = notifier
        self.batch_size = batch_size
        self.persisted = 0
        self._cache: dict[str, Order] = {}
        self._pending: list[str] = []

    @property
    def cache_size(self) -> int:
        """How many orders the in-memory cache holds (only the pending ones)."""
        return len(self._cache)

    def submit(self, order: Order) -> None:
        """Queue one order; resubmitting a pending order replaces it."""
        if order.order_id not in self._cache:
            self._pending.append(order.order_id)
        order.status = "placed"
        self._cache[order.order_id] = order
        if len(self._pending) >= self.batch_size:
            self.flush()

    def submit_many(self, orders: Iterable[Order]) -> int:
        """Queue every order, flush the rest; returns how many orders were persisted."""
        before = self.persisted
        for order in orders:
            self.submit(order)
        self.flush()
        return self.persisted - before

    def get(self, order_id: str) -> Order | None:
        """A pending order from the cache, else the stored one."""
        cached = self._cache.get(order_id)
        return cached if cached is not None else self.store.get(order_id)

    def flush(self) -> int:
        """Write the pending orders in one batch and notify each; returns how many."""
        if not self._pending:
            return 0
        batch = [self._cache[order_id] for order_id in self._pending]
        self.store.save_many(batch)
        for order in batch:
            self.notifier.order_placed(order)
            del self._cache[order.order_id]
        self._pending = []
        self.persisted += len(batch)
        return len(batch)

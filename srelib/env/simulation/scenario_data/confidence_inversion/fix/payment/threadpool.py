"""Transfer jobs executed by the payment worker pool."""

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from payment.locking import hold_in_order


@dataclass(frozen=True)
class TransferJob:
    """One queued money movement between two ledger accounts."""

    src: object
    dst: object
    amount_cents: int


def check_transfer(src, dst, amount_cents: int) -> None:
    """Reject a transfer that can never be valid, before any row lock is taken."""
    if not isinstance(amount_cents, int) or amount_cents <= 0:
        raise ValueError(f"amount_cents must be a positive integer, got {amount_cents!r}")
    if src.account_id == dst.account_id:
        raise ValueError(f"cannot transfer from {src.account_id} to itself")


class PoolWorker:
    """Applies transfers between ledger accounts; many workers run concurrently."""

    def __init__(self, name: str = "pool-worker"):
        self.name = name
        self.completed = 0

    def transfer(self, src, dst, amount_cents: int) -> None:
        """Move ``amount_cents`` from ``src`` to ``dst``, holding both row locks throughout."""
        check_transfer(src, dst, amount_cents)
        with hold_in_order(src, dst):
            src.withdraw(amount_cents)
            dst.deposit(amount_cents)
        self.completed += 1

    def run(self, job: TransferJob) -> None:
        self.transfer(job.src, job.dst, job.amount_cents)


def run_jobs(jobs, workers: int = 8):
    """Run ``jobs`` on a thread pool of ``workers`` PoolWorkers; returns their exceptions (None = ok)."""
    pool_workers = [PoolWorker(f"pool-worker-{n}") for n in range(workers)]
    with ThreadPoolExecutor(max_workers=workers) as executor:
        futures = [executor.submit(pool_workers[n % workers].run, job) for n, job in enumerate(jobs)]
        return [future.exception() for future in futures]

"""A job's cost cap: one budget in DynamoDB, shared by every shard of the job.

`POST /run` holds its cap in memory (`fair_forge_core.judges.usage.CostBudget`); a job's shards
run in separate Lambdas, so their reservations go to one item of the operator's budget table
(`JOBS_BUDGET_TABLE`, template.yaml's `JobsBudgetTable`), keyed by the job id:

- `committed`: what was spent plus what calls in flight reserved, in nano-USD (integers, so no
  rounding drifts across thousands of updates; amounts are rounded up);
- a reservation is one conditional `UpdateItem`: `committed = committed + amount` on the
  condition `committed <= cap − amount` (DynamoDB compares, it does not add, in a condition);
  refused, the call does not start. The item is created by the first reservation;
- a settlement adds `spent − reserved` to `committed` (never a condition: it only gives back),
  and `spent` to `spent` (what the shards' calls cost, for the logs);
- `expires_at` (the table's time-to-live attribute) removes the item a week later;
- a charge (`charge`: an agent's reported cost, which is known only once spent) adds `amount` to
  both `committed` and `spent`, creating the item if need be: never refused, it only leaves less
  for the reservations after it (docs/jobs.md "Run the agent from a job").

So the shards together never reserve more than the cap, whatever their number and timing, and
the job's spending is bounded as `/run`'s is (docs/how-to/cost-and-cache.md "Judge cost and cache").
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass

NANO = 1_000_000_000
ITEM_LIFETIME_S = 7 * 24 * 3600


def nano_usd(amount: float) -> int:
    """USD as whole nano-USD, rounded up (a reservation never comes out smaller than asked)."""
    return math.ceil(amount * NANO - 1e-6)  # the small slack keeps exact products (0.1 × 1e9) exact


@dataclass
class DynamoBudget:
    """The `CostBudget` of one job, in one item of `table` (see the module docstring)."""

    table: str
    job_id: str
    cap_usd: float

    async def reserve(self, amount: float) -> bool:
        return await asyncio.to_thread(self._reserve, nano_usd(amount))

    async def settle(self, reserved: float, spent: float) -> None:
        await asyncio.to_thread(self._settle, nano_usd(reserved), nano_usd(spent))

    async def charge(self, amount: float) -> None:
        await asyncio.to_thread(self._charge, nano_usd(amount))

    def _charge(self, amount: int) -> None:
        from handler.job_store import client

        client("dynamodb").update_item(
            TableName=self.table,
            Key={"job_id": {"S": self.job_id}},
            UpdateExpression=(
                "SET committed = if_not_exists(committed, :zero) + :amount, "
                "spent = if_not_exists(spent, :zero) + :amount, expires_at = if_not_exists(expires_at, :expires)"
            ),
            ExpressionAttributeValues={
                ":zero": {"N": "0"},
                ":amount": {"N": str(amount)},
                ":expires": {"N": str(int(time.time()) + ITEM_LIFETIME_S)},
            },
        )

    def _reserve(self, amount: int) -> bool:
        from handler.job_store import client

        limit = nano_usd(self.cap_usd) - amount
        if limit < 0:
            return False
        dynamodb = client("dynamodb")
        try:
            dynamodb.update_item(
                TableName=self.table,
                Key={"job_id": {"S": self.job_id}},
                UpdateExpression=(
                    "SET committed = if_not_exists(committed, :zero) + :amount, "
                    "expires_at = if_not_exists(expires_at, :expires)"
                ),
                ConditionExpression="attribute_not_exists(committed) OR committed <= :limit",
                ExpressionAttributeValues={
                    ":zero": {"N": "0"},
                    ":amount": {"N": str(amount)},
                    ":limit": {"N": str(limit)},
                    ":expires": {"N": str(int(time.time()) + ITEM_LIFETIME_S)},
                },
            )
        except dynamodb.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def _settle(self, reserved: int, spent: int) -> None:
        from handler.job_store import client

        client("dynamodb").update_item(
            TableName=self.table,
            Key={"job_id": {"S": self.job_id}},
            UpdateExpression="SET committed = committed + :change, spent = if_not_exists(spent, :zero) + :spent",
            ExpressionAttributeValues={
                ":change": {"N": str(spent - reserved)},
                ":spent": {"N": str(spent)},
                ":zero": {"N": "0"},
            },
        )

    def committed_usd(self) -> tuple[float, float]:
        """(committed, spent) so far, in USD (0, 0 before the first reservation)."""
        from handler.job_store import client

        item = (
            client("dynamodb")
            .get_item(TableName=self.table, Key={"job_id": {"S": self.job_id}}, ConsistentRead=True)
            .get("Item", {})
        )
        return int(item.get("committed", {}).get("N", 0)) / NANO, int(item.get("spent", {}).get("N", 0)) / NANO

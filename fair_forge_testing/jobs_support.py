"""What the tests of asynchronous jobs share: a varied workload, a judge that leaves chosen turns unscored.

The workload is built to make sharding hard: several assistants, tasks whose attempts
are spread far apart (so a task spans shards), conversations of one to four turns,
right and wrong answers, tool calls right and wrong, turns repeated across
conversations (judged once per shard instead of once per request), and turns the
judge cannot score (their conversations are unscored).
"""

from __future__ import annotations

import random
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from fair_forge_core.judges.reference import ReferenceJudge

UNSCORABLE = "[[garbled]]"  # a query with this marker gets a reply without a score


class GarblingJudge(ReferenceJudge):
    """The offline judge, except that it never gives a score for a turn whose query has `UNSCORABLE`."""

    def _reply(self, messages: list[BaseMessage], **kwargs: Any) -> AIMessage:
        if any(UNSCORABLE in str(message.content) for message in messages):
            return AIMessage(content="I would rather not grade this one.")
        return super()._reply(messages, **kwargs)


def _turn(rng: random.Random, c: int, t: int, *, unscorable: bool) -> dict[str, Any]:
    a, b = rng.randint(1, 60), rng.randint(1, 60)
    kind = rng.random()
    if kind < 0.15:  # a turn many conversations share, word for word
        query, truth, answer = "What is the capital of France?", "Paris", rng.choice(["Paris.", "It is Lyon."])
    else:
        query, truth = f"What is {a} plus {b}?", str(a + b)
        answer = rng.choice([f"The result is {a + b}.", f"It is {a + b}", f"The result is {a + b + 1}.", "No idea."])
    if unscorable:
        query += " " + UNSCORABLE
    turn: dict[str, Any] = {
        "qa_id": f"q{c}-{t}",
        "query": query,
        "assistant": answer,
        "ground_truth_assistant": truth,
    }
    if kind >= 0.15 and rng.random() < 0.5:
        used_b = b if rng.random() < 0.75 else b + 1
        turn["agentic"] = {
            "tools_used": [{"tool_name": "calculator", "parameters": {"a": a, "b": used_b}, "result": a + used_b}],
            "final_answer_uses_tools": rng.random() < 0.8,
        }
        turn["ground_truth_agentic"] = {"expected_tools": [{"tool_name": "calculator", "parameters": {"a": a, "b": b}}]}
    return turn


def varied_conversations(count: int, *, seed: int = 7, unscorable_share: float = 0.03) -> list[dict[str, Any]]:
    """`count` conversations as the API takes them (see the module docstring), deterministic in `seed`."""
    rng = random.Random(seed)
    tasks = max(1, count // 6)
    conversations = []
    for c in range(count):
        conversation: dict[str, Any] = {
            "session_id": f"session-{c}",
            "assistant_id": rng.choice(["agent_a", "agent_b", "agent_c"]),
            "conversation": [
                _turn(rng, c, t, unscorable=rng.random() < unscorable_share) for t in range(rng.randint(1, 4))
            ],
        }
        if rng.random() < 0.8:  # c % tasks: attempts of one task lie `tasks` conversations apart
            conversation["task_id"] = f"task-{c % tasks}"
        if rng.random() < 0.3:
            conversation["context"] = "Arithmetic help desk"
        conversations.append(conversation)
    return conversations

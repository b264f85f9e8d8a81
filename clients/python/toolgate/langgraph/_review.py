"""One node run as a sequence of steps, and the review in the middle of it.

`drive` is a generator yielding the requests of a run: ("batch", calls) -> list[ToolMessage], and
("decide", call_id, action, data) -> None or the GatewayError it raised. `run` and `arun` carry them out, with
`perform_sync` (a `Client`) or `perform_async` (an `AsyncClient`). Between the first batch and the second, calls
pending review raise a LangGraph `interrupt` (the payload of `INTERRUPT_TYPE`), resume values are read into
ToolReview decisions (`RESUME_ACTIONS`), and `Memo` keeps the answers of the first run across the interrupt.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Generator, Mapping
from typing import Any

import grpc
from langgraph.types import interrupt

from ..client import AsyncClient, Client, GatewayError
from ..types import CallContext, ToolMessage

#: The resume actions, and the ToolReview action each maps to. The gateway's own names are accepted too.
RESUME_ACTIONS = {
    "continue": "approve",
    "update": "edit",
    "feedback": "reject",
    "approve": "approve",
    "edit": "edit",
    "reject": "reject",
}

#: The `type` of the value a review interrupt carries.
INTERRUPT_TYPE = "toolgate.review"

# Batches interrupted for review and not yet resumed, remembered in this process; see `Memo`.
_MEMO_LIMIT = 1024

Step = tuple
Driver = Generator[Step, Any, list[ToolMessage]]


class Memo:
    """Answers of calls that already ran in a batch now interrupted for review, and which calls of it are
    pending, keyed by the batch (thread, namespace and the calls themselves). LangGraph runs the node again from
    the start on resume; with this, the calls that ran are not sent again and the interrupts line up with the
    same pending calls. It lives in this process: a resume in another process sends the batch again, which
    runs its calls that need no review a second time (reviewed calls are answered by id, never run twice)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._batches: OrderedDict[tuple, tuple[dict[str, ToolMessage], list[str]]] = OrderedDict()

    def get(self, key: tuple) -> tuple[dict[str, ToolMessage], list[str]] | None:
        with self._lock:
            found = self._batches.get(key)
            return None if found is None else (dict(found[0]), list(found[1]))

    def put(self, key: tuple, answers: dict[str, ToolMessage], pending: list[str]) -> None:
        with self._lock:
            self._batches[key] = (dict(answers), list(pending))
            self._batches.move_to_end(key)
            while len(self._batches) > _MEMO_LIMIT:
                self._batches.popitem(last=False)

    def drop(self, key: tuple) -> None:
        with self._lock:
            self._batches.pop(key, None)


# ---- the steps of a run ----


def drive(calls: list[dict[str, Any]], key: tuple, memo: Memo, review: bool) -> Driver:
    """The answers to `calls`, in call order, as steps: the batch; then, for calls pending review (unless
    `review` is off), a decision for each and the pending calls executed again, which answers their outcome."""
    remembered = memo.get(key)
    if remembered is not None:
        # A resume: the answers of the first run, those that ran and those pending; nothing is sent again
        # before the decisions.
        answers, pending_ids = remembered
    else:
        answers = dict(zip((c["id"] for c in calls), (yield ("batch", calls)), strict=True))
        pending_ids = [c["id"] for c in calls if answers[c["id"]].pending_review]
        if not pending_ids or not review:
            return [answers[c["id"]] for c in calls]
        memo.put(key, answers, pending_ids)
    pending_calls = [c for c in calls if c["id"] in pending_ids]
    decisions = _collect_decisions(pending_calls, answers)
    for call in pending_calls:
        action, data = decisions[call["id"]]
        while True:
            refused = yield ("decide", call["id"], action, data)
            if refused is None or refused.code in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND):
                # Decided now, or before this run (a resume replayed, or a reviewer elsewhere): either way
                # executing the call id again answers the outcome.
                break
            if refused.code != grpc.StatusCode.INVALID_ARGUMENT:
                raise refused
            # The edited arguments do not fit the tool: ask again about this call, saying why.
            action, data = _collect_decisions([call], answers, error=refused.details)[call["id"]]
    outcomes = yield ("batch", pending_calls)
    for call, outcome in zip(pending_calls, outcomes, strict=True):
        answers[call["id"]] = outcome
    memo.drop(key)
    return [answers[c["id"]] for c in calls]


def run(driver: Driver, perform: Callable[[Step], Any]) -> list[ToolMessage]:
    try:
        step = next(driver)
        while True:
            step = driver.send(perform(step))
    except StopIteration as stop:
        return stop.value


async def arun(driver: Driver, perform: Callable[[Step], Awaitable[Any]]) -> list[ToolMessage]:
    try:
        step = next(driver)
        while True:
            step = driver.send(await perform(step))
    except StopIteration as stop:
        return stop.value


def perform_sync(client: Client, step: Step, mode: str, ctx: CallContext, timeout: float | None) -> Any:
    if step[0] == "batch":
        return client.execute_batch(step[1], context=ctx, review_mode=mode, timeout=timeout)
    _, call_id, action, data = step
    try:
        client.decide(call_id, action, tenant=ctx.tenant, timeout=timeout, **_decide_kwargs(action, data))
    except GatewayError as err:
        return err
    return None


async def perform_async(client: AsyncClient, step: Step, mode: str, ctx: CallContext, timeout: float | None) -> Any:
    if step[0] == "batch":
        return await client.execute_batch(step[1], context=ctx, review_mode=mode, timeout=timeout)
    _, call_id, action, data = step
    try:
        await client.decide(call_id, action, tenant=ctx.tenant, timeout=timeout, **_decide_kwargs(action, data))
    except GatewayError as err:
        return err
    return None


def _decide_kwargs(action: str, data: Any) -> dict[str, Any]:
    if action == "edit":
        return {"arguments": data}
    if action == "reject":
        return {"feedback": "" if data is None else data if isinstance(data, str) else json.dumps(data)}
    return {}


# ---- interrupting, and reading the resume values ----


def _collect_decisions(
    pending: list[dict[str, Any]], answers: Mapping[str, ToolMessage], *, error: str | None = None
) -> dict[str, tuple]:
    """A decision for every pending call, interrupting until each has one. A resume value answers the first
    undecided call, or is a list answering them in order, or a dict keyed by tool call id."""
    decisions: dict[str, tuple] = {}
    while undecided := [c for c in pending if c["id"] not in decisions]:
        value = interrupt(_interrupt_payload(undecided, answers, error=error))
        for call_id, decision in _resume_decisions(value, [c["id"] for c in undecided]).items():
            decisions.setdefault(call_id, decision)
    return decisions


def _interrupt_payload(
    undecided: list[dict[str, Any]], answers: Mapping[str, ToolMessage], *, error: str | None = None
) -> dict[str, Any]:
    """What the interrupt carries: the first undecided call at the top level, all of them in `pending`."""
    pending = []
    for call in undecided:
        answer = answers[call["id"]]
        pending.append(
            {
                "tool_call_id": call["id"],
                "name": answer.name or call["name"],
                "args": answer.arguments if answer.effective_arguments else call.get("args"),
                "content": answer.content,
                "repairs": [r.to_dict() for r in answer.repairs],
            }
        )
    payload = {
        "type": INTERRUPT_TYPE,
        **pending[0],
        "pending": pending,
        "actions": ["continue", "update", "feedback"],
    }
    if error is not None:
        payload["error"] = error
    return payload


def _resume_decisions(value: Any, undecided: list[str]) -> dict[str, tuple[str, Any]]:
    """Reads a resume value: `{"action", "data"}` for the first undecided call, a list of those for the
    undecided calls in order, or a dict of them keyed by tool call id."""
    if isinstance(value, Mapping) and "action" in value:
        return {undecided[0]: _decision(value)}
    if isinstance(value, Mapping):
        return {str(call_id): _decision(d) for call_id, d in value.items()}
    if isinstance(value, list | tuple):
        return {call_id: _decision(d) for call_id, d in zip(undecided, value, strict=False)}
    raise ValueError(
        'resume a toolgate review with {"action": "continue" | "update" | "feedback", "data": ...}, a list of '
        f"those, or a dict of them keyed by tool call id; got {value!r}"
    )


def _decision(value: Any) -> tuple[str, Any]:
    if not isinstance(value, Mapping) or "action" not in value:
        raise ValueError(f'a review decision is {{"action": ..., "data": ...}}, got {value!r}')
    action = RESUME_ACTIONS.get(str(value["action"]).lower())
    if action is None:
        raise ValueError(f"a review action is continue, update or feedback, not {value['action']!r}")
    data = value.get("data")
    if action == "edit" and not isinstance(data, Mapping | str):
        raise ValueError(f"an update needs the new arguments as data (a dict), got {data!r}")
    return action, data

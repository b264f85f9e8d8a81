"""One node run as a sequence of steps, and the review in the middle of it.

`drive` is a generator yielding the requests of a run: ("batch", calls) -> list[ToolMessage], and
("decide", call_id, action, data) -> None or the GatewayError it raised. `run` and `arun` carry them out, with
`perform_sync` (a `Client`) or `perform_async` (an `AsyncClient`), and keep what each step answered in a `Memo`.
Between the first batch and the second, calls pending review raise a LangGraph `interrupt` (the payload of
`INTERRUPT_TYPE`), and resume values are read into ToolReview decisions (`RESUME_ACTIONS`).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Generator, Mapping
from typing import Any

import grpc
from langgraph.errors import GraphBubbleUp
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

#: Why the node interrupts again for a call it already had decided.
STILL_PENDING = (
    "The gateway answered PENDING_REVIEW again after the decision: it lost the review (restarted with a fresh "
    "data dir?) and filed the call for review anew. Decide it again."
)

Step = tuple
Driver = Generator[Step, Any, list[ToolMessage]]


class Memo:
    """What each step of a batch answered so far (the batch's answers, each decision's outcome), for batches now
    interrupted for review, keyed by the batch (thread, namespace and the calls themselves). LangGraph runs the
    node again from the start on resume; the steps already answered are answered from here instead of being sent
    again, so the calls that ran do not run again, a decision is sent once, and the interrupts line up with the
    same pending calls. It lives in this process: a resume in another process sends the batch again, which runs
    its calls that need no review a second time (reviewed calls are answered by id, never run twice)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._batches: OrderedDict[tuple, list[Any]] = OrderedDict()

    def get(self, key: tuple) -> list[Any]:
        with self._lock:
            return list(self._batches.get(key, ()))

    def put(self, key: tuple, answered: list[Any]) -> None:
        with self._lock:
            self._batches[key] = list(answered)
            self._batches.move_to_end(key)
            while len(self._batches) > _MEMO_LIMIT:
                self._batches.popitem(last=False)

    def drop(self, key: tuple) -> None:
        with self._lock:
            self._batches.pop(key, None)


class _Replay:
    """One run's view of the memo: the answers of earlier runs of the same batch, in step order, then new ones."""

    def __init__(self, memo: Memo, key: tuple) -> None:
        self.memo, self.key = memo, key
        self.answered = memo.get(key)
        self.index = 0

    def known(self) -> bool:
        return self.index < len(self.answered)

    def record(self, answer: Any) -> Any:
        self.answered.append(answer)
        self.memo.put(self.key, self.answered)
        return answer

    def send(self, driver: Driver, answer: Any) -> tuple[bool, Any]:
        """Hands `answer` to the driver: (False, next step), or (True, the run's answers) when it is done. An
        interrupt keeps what was answered for the resume; any other error forgets the answer that caused it."""
        try:
            step = driver.send(answer)
        except StopIteration as stop:
            self.memo.drop(self.key)
            return True, stop.value
        except GraphBubbleUp:
            raise
        except BaseException:
            if self.index:
                self.memo.put(self.key, self.answered[: self.index])
            else:
                self.memo.drop(self.key)
            raise
        self.index += 1
        return False, step


def run(driver: Driver, perform: Callable[[Step], Any], memo: Memo, key: tuple) -> list[ToolMessage]:
    replay, step = _Replay(memo, key), next(driver)
    while True:
        answer = replay.answered[replay.index] if replay.known() else replay.record(perform(step))
        done, step = replay.send(driver, answer)
        if done:
            return step


async def arun(driver: Driver, perform: Callable[[Step], Awaitable[Any]], memo: Memo, key: tuple) -> list[ToolMessage]:
    replay, step = _Replay(memo, key), next(driver)
    while True:
        answer = replay.answered[replay.index] if replay.known() else replay.record(await perform(step))
        done, step = replay.send(driver, answer)
        if done:
            return step


def execute_sync(
    client: Client,
    calls: list[dict[str, Any]],
    review: bool,
    ctx: CallContext,
    timeout: float | None,
    memo: Memo,
    key: tuple,
) -> list[ToolMessage]:
    """The answers to `calls` on a `Client`, through the steps of `drive` (interrupting for review unless `review`
    is off, when the gateway waits for the decision instead), remembered in `memo` under `key`."""
    mode = "defer" if review else "wait"
    return run(drive(calls, review), lambda step: perform_sync(client, step, mode, ctx, timeout), memo, key)


async def execute_async(
    client: Client | AsyncClient,
    calls: list[dict[str, Any]],
    review: bool,
    ctx: CallContext,
    timeout: float | None,
    memo: Memo,
    key: tuple,
) -> list[ToolMessage]:
    """`execute_sync` in an event loop: on an `AsyncClient`, or on a `Client` from a worker thread."""
    mode = "defer" if review else "wait"

    def perform(step: Step) -> Awaitable[Any]:
        if isinstance(client, AsyncClient):
            return perform_async(client, step, mode, ctx, timeout)
        return asyncio.to_thread(perform_sync, client, step, mode, ctx, timeout)

    return await arun(drive(calls, review), perform, memo, key)


# ---- the steps of a run ----


def drive(calls: list[dict[str, Any]], review: bool) -> Driver:
    """The answers to `calls`, in call order, as steps: the batch; then, for calls pending review (unless
    `review` is off), a decision for each and the pending calls executed again, which answers their outcome; and
    again for any still pending after that."""
    answers = dict(zip((c["id"] for c in calls), (yield ("batch", calls)), strict=True))
    pending = [c for c in calls if answers[c["id"]].pending_review] if review else []
    reason = None
    while pending:
        # No decision is sent before every pending call has one.
        decisions = _collect_decisions(pending, answers, error=reason)
        for call in pending:
            yield from _decide(call, decisions[call["id"]], answers)
        outcomes = yield ("batch", pending)
        answers.update(zip((c["id"] for c in pending), outcomes, strict=True))
        pending = [c for c in pending if answers[c["id"]].pending_review]
        reason = STILL_PENDING
    return [answers[c["id"]] for c in calls]


def _decide(call: dict[str, Any], decision: tuple[str, Any], answers: Mapping[str, ToolMessage]) -> Driver:
    """Sends one decision, asking again while the gateway refuses the edited arguments."""
    action, data = decision
    while True:
        refused = yield ("decide", call["id"], action, data)
        if refused is None or refused.code == grpc.StatusCode.FAILED_PRECONDITION:
            # Decided now, or before (a reviewer elsewhere): executing the call id again answers the outcome.
            return
        if refused.code != grpc.StatusCode.INVALID_ARGUMENT:
            raise _refusal(call, refused)
        # The edited arguments do not fit the tool: ask again about this call, saying why.
        action, data = _collect_decisions([call], answers, error=refused.details)[call["id"]]


def _refusal(call: dict[str, Any], refused: GatewayError) -> GatewayError:
    """The error a refused decision raises, saying what to do about it."""
    if refused.code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
        why = (
            f"{refused.details}. GatewayToolNode decides reviews through ToolReview, which needs the gateway's "
            "review (or admin) token: Client(..., review_token=...)"
        )
    elif refused.code == grpc.StatusCode.NOT_FOUND:
        why = (
            f"{refused.details}. The gateway has no review of tool call {call['id']!r} ({call['name']}): it lost "
            "its reviews (restarted with a fresh data dir?) or dropped the decided one (review.keep_decided_s). "
            "The call did not run, and the node does not send it again, which would file a new review"
        )
    else:
        return refused
    return GatewayError(refused.method, refused.code, why)


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

"""The examples (`examples/*.py`), each run as a user runs it (`python examples/<name>.py`) against the real gateway
whose planes are closed by tokens: each must exit 0 and print every check it made. The fallback graph is also
driven here in-process, to look at its final state."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import ADMIN_TOKEN, DATA_TOKEN, REVIEW_TOKEN
from langchain_core.messages import AIMessage, HumanMessage
from support import EXAMPLES, ai, call, forecast_tool, kinds, scripted, tool_messages

# What each example must print, in order: its checks.
EXPECTED = {
    "error_fallback": [
        "checked: the better model was shown the conversation without the failed attempt",
        "checked: the final state: human, ai, tool, ai",
        "checked: the call is the better model's",
        "checked: the better model's call ran",
        "checked: no trace of the failed attempt in the final messages",
        "checked: the tool ran once, with the better model's arguments",
    ],
    "review": [
        "checked: continue: the call waits for review, and nothing was sent",
        "checked: continue sent it as written",
        "checked: update: the call waits for review, and nothing was sent",
        "checked: update sent the reviewer's arguments",
        "checked: the AIMessage shows the arguments that ran",
        "checked: feedback: the call waits for review, and nothing was sent",
        "checked: feedback sent nothing",
        "checked: the model is told the feedback",
        "checked: two emails sent, each once",
    ],
    "react_agent": [
        "checked: create_react_agent took the node and bound the model to the gateway's tools",
        "checked: one run: human, ai, tool, tool, ai",
        "checked: the AIMessage shows the repaired arguments (days as integers)",
        "checked: both calls ran repaired",
        "checked: the tool ran each call once, with integers",
    ],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_example_runs_and_prints_its_checks(name, gateway, capsys):
    env = {
        **os.environ,
        "TOOLGATE_TARGET": gateway.target,
        "TOOLGATE_TOKEN": DATA_TOKEN,
        "TOOLGATE_ADMIN_TOKEN": ADMIN_TOKEN,
        "TOOLGATE_REVIEW_TOKEN": REVIEW_TOKEN,
    }
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py")], env=env, capture_output=True, text=True, timeout=100
    )
    with capsys.disabled():
        # What the example checked, in the run's log (.ci/run shows it).
        print(f"\n--- examples/{name}.py (exit {done.returncode})\n{done.stdout}{done.stderr}", end="")
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines() if line.startswith("checked:")] == EXPECTED[name]
    if name == "error_fallback":
        routed = 'routing to the better model: INVALID_ARGUMENTS for input {"city": "Oslo", "days": "next week"}'
        assert routed in done.stdout


def test_the_fallback_graph_ends_with_the_better_models_valid_call_and_no_trace_of_the_failed_one(
    client, agent_client, http_tools
):
    from error_fallback import build_graph

    name = forecast_tool(client, http_tools)
    wrong, right = call(name, {"city": "Oslo", "days": "next week"}), call(name, {"city": "Oslo", "days": 7})
    failed_attempt, better_call = ai(wrong), ai(right)
    cheap, better = scripted(failed_attempt, AIMessage("Clear all week.")), scripted(better_call)

    out = build_graph(agent_client, cheap, better).invoke({"messages": [HumanMessage("Oslo next week?")]})

    messages = out["messages"]
    assert kinds(messages) == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    assert messages[1].id == better_call.id and messages[1].tool_calls == better_call.tool_calls
    [answer] = tool_messages(messages)
    assert (answer.tool_call_id, answer.status, answer.artifact) == (
        right["id"],
        "success",
        {"city": "Oslo", "sky": "clear"},
    )
    # Nothing of the failed attempt: not its AIMessage, not its call, not its error.
    assert failed_attempt.id not in {m.id for m in messages}
    assert wrong["id"] not in {getattr(m, "tool_call_id", None) for m in messages}
    assert not any("error" in m.additional_kwargs for m in messages)
    # The better model was shown the conversation without it.
    assert [kinds(prompt) for prompt in better.seen] == [["HumanMessage"]]
    assert [r.args for r in http_tools.received(name)] == [{"city": "Oslo", "days": 7}]

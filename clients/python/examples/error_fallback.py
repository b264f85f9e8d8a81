"""Handling tool-call errors with a fallback to a better model, the failed attempt removed from the state.

The cheap model calls the forecast tool with arguments no repair can fix ("next week" for a number of days).
GatewayToolNode answers an error ToolMessage whose typed error is in `additional_kwargs["error"]`; a conditional
edge reads its `kind`, and for a call the model got wrong (TOOL_NOT_FOUND, MALFORMED_ARGUMENTS, INVALID_ARGUMENTS)
routes to a node that removes the failed attempt (the AIMessage and its ToolMessages, with `RemoveMessage`), then
to the better model, whose call runs. The final state holds the better model's valid call and nothing of the
failed one.

    python examples/error_fallback.py      (a gateway on TOOLGATE_TARGET; see scripted.py)
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import tools_condition
from scripted import FORECAST, ToolServer, ai_calls, check, connect, scripted, transcript

from toolgate.langgraph import GatewayToolNode

#: The error kinds of a call the model wrote wrong: a better model may write it right.
MODEL_MISTAKES = {"TOOL_NOT_FOUND", "MALFORMED_ARGUMENTS", "INVALID_ARGUMENTS"}


def build_graph(client: Any, cheap: Any, better: Any) -> Any:
    """agent -> tools -> (a model's mistake) remove_failed_attempt -> better_agent -> tools -> agent."""

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [cheap.invoke(state["messages"])]}

    def better_agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [better.invoke(state["messages"])]}

    def after_tools(state: MessagesState) -> Literal["remove_failed_attempt", "agent"]:
        answers = []
        for m in reversed(state["messages"]):
            if not isinstance(m, ToolMessage):
                break
            answers.append(m)
        errors = [m.additional_kwargs["error"] for m in answers if "error" in m.additional_kwargs]
        mistakes = [e for e in errors if e["kind"] in MODEL_MISTAKES]
        for e in mistakes:
            print(f"routing to the better model: {e['kind']} for input {e['original_arguments']}")
        return "remove_failed_attempt" if mistakes else "agent"

    def remove_failed_attempt(state: MessagesState) -> dict[str, Any]:
        messages = state["messages"]
        last_ai = max(i for i, m in enumerate(messages) if isinstance(m, AIMessage))
        return {"messages": [RemoveMessage(id=m.id) for m in messages[last_ai:]]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", GatewayToolNode(client))
    builder.add_node("remove_failed_attempt", remove_failed_attempt)
    builder.add_node("better_agent", better_agent)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition, ["tools", END])
    builder.add_conditional_edges("tools", after_tools, ["remove_failed_attempt", "agent"])
    builder.add_edge("remove_failed_attempt", "better_agent")
    builder.add_conditional_edges("better_agent", tools_condition, ["tools", END])
    return builder.compile()


def main() -> None:
    agent_client, admin = connect()
    server = ToolServer(lambda args: {"city": args["city"], "days": args["days"], "sky": "clear"})
    admin.register_tool({**FORECAST, "backend": {"http": {"url": server.url}}})
    cheap = scripted(
        ai_calls("cheap-1", ("call-cheap", "forecast", {"city": "Oslo", "days": "next week"})),
        AIMessage(id="cheap-2", content="Clear skies in Oslo all week."),
    )
    better = scripted(ai_calls("better-1", ("call-better", "forecast", {"city": "Oslo", "days": 7})))

    out = build_graph(agent_client, cheap, better).invoke({"messages": [HumanMessage("Weather in Oslo next week?")]})
    messages = out["messages"]
    print(transcript(messages))

    shown = [[m.type for m in prompt] for prompt in better.seen]
    check(shown == [["human"]], "the better model was shown the conversation without the failed attempt")
    check([m.type for m in messages] == ["human", "ai", "tool", "ai"], "the final state: human, ai, tool, ai")
    check(
        messages[1].id == "better-1" and messages[1].tool_calls[0]["args"]["days"] == 7,
        "the call is the better model's",
    )
    check(messages[2].status == "success" and messages[2].tool_call_id == "call-better", "the better model's call ran")
    ids = {m.id for m in messages} | {getattr(m, "tool_call_id", None) for m in messages}
    check("cheap-1" not in ids and "call-cheap" not in ids, "no trace of the failed attempt in the final messages")
    check(server.received == [{"city": "Oslo", "days": 7}], "the tool ran once, with the better model's arguments")
    server.close()


if __name__ == "__main__":
    main()

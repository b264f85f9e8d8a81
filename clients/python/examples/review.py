"""Reviewing tool calls before they run: continue, update, or feedback.

`send_email` needs review (`review.required` in its spec). GatewayToolNode turns the call into a LangGraph
interrupt carrying the call as the gateway will run it (repaired); the graph waits in its checkpointer until a
person resumes it with `{"action": "continue"}`, `{"action": "update", "data": new_arguments}` or
`{"action": "feedback", "data": "what the model is told"}`. The email is sent at most once.

    python examples/review.py      (a gateway on TOOLGATE_TARGET, with TOOLGATE_REVIEW_TOKEN if it has one)
"""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import tools_condition
from langgraph.types import Command
from scripted import ToolServer, ai_calls, check, connect, scripted, transcript

from toolgate.langgraph import GatewayToolNode

SEND_EMAIL = {
    "name": "send_email",
    "description": "Sends an email.",
    "input_schema": {
        "type": "object",
        "properties": {"to": {"type": "string"}, "subject": {"type": "string"}, "body": {"type": "string"}},
        "required": ["to", "subject", "body"],
    },
    "review": {"required": True},
}
WRITTEN = {"to": "all@example.com", "subject": "Launch", "body": "Monday!"}
EDITED = {"to": "team@example.com", "subject": "Launch", "body": "We launch on Monday."}
RESUMES = {
    "continue": {"action": "continue"},
    "update": {"action": "update", "data": EDITED},
    "feedback": {"action": "feedback", "data": "Don't email the whole company; ask me who should get it."},
}


def graph_of(model: Any, client: Any) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_node("tools", GatewayToolNode(client))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=InMemorySaver())


def main() -> None:
    agent_client, admin = connect()
    server = ToolServer(lambda args: {"queued": True})
    admin.register_tool({**SEND_EMAIL, "backend": {"http": {"url": server.url}}})
    run = uuid.uuid4().hex[:8]
    for choice, resume in RESUMES.items():
        call_id = f"mail-{choice}-{run}"
        model = scripted(ai_calls(f"ai-{choice}-{run}", (call_id, "send_email", WRITTEN)), AIMessage("Done."))
        graph = graph_of(model, agent_client)
        config = {"configurable": {"thread_id": f"review-{choice}-{run}", "user_id": "u-1"}}

        sent_before = len(server.received)
        paused = graph.invoke({"messages": [HumanMessage("Announce the launch.")]}, config)
        pending = paused["__interrupt__"][0].value
        print(f"\n{choice}: the graph waits for review of {pending['name']}({pending['args']})")
        waiting = pending["tool_call_id"] == call_id and len(server.received) == sent_before
        check(waiting, f"{choice}: the call waits for review, and nothing was sent")
        out = graph.invoke(Command(resume=resume), config)
        print(transcript(out["messages"]))
        answer = out["messages"][2]
        if choice == "continue":
            check(
                answer.status == "success" and server.received[sent_before:] == [WRITTEN], "continue sent it as written"
            )
        elif choice == "update":
            check(server.received[sent_before:] == [EDITED], "update sent the reviewer's arguments")
            check(out["messages"][1].tool_calls[0]["args"] == EDITED, "the AIMessage shows the arguments that ran")
        else:
            check(len(server.received) == sent_before, "feedback sent nothing")
            check(answer.status == "error" and "whole company" in answer.content, "the model is told the feedback")
    print(f"\nemails sent: {len(server.received)}")
    check(len(server.received) == 2, "two emails sent, each once")
    server.close()


if __name__ == "__main__":
    main()

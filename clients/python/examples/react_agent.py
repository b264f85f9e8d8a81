"""A prebuilt agent on the gateway: `create_react_agent(model, tools=GatewayToolNode(client))`.

The node is a LangGraph `ToolNode` carrying the gateway's tools, which the agent binds its model to. The model
writes two forecast calls with the days as text ("7"); the gateway repairs them to integers, runs both in one
batch, and the node answers the AIMessage again with the arguments that ran, beside one ToolMessage per call.

    python examples/react_agent.py      (a gateway on TOOLGATE_TARGET; see scripted.py)
"""

from __future__ import annotations

import warnings

from langchain_core.messages import HumanMessage
from langgraph.prebuilt import create_react_agent
from scripted import FORECAST, ToolServer, ai_calls, check, connect, scripted, transcript

from toolgate.langgraph import GatewayToolNode


def main() -> None:
    agent_client, admin = connect()
    server = ToolServer(lambda args: {"city": args["city"], "days": args["days"], "sky": "clear"})
    admin.register_tool({**FORECAST, "backend": {"http": {"url": server.url}}})
    model = scripted(
        ai_calls(
            "ai-1",
            ("call-oslo", "forecast", {"city": "Oslo", "days": "7"}),
            ("call-bergen", "forecast", {"city": "Bergen", "days": "3"}),
        ),
        "Clear in Oslo and in Bergen.",
    )
    with warnings.catch_warnings():
        # LangGraph 1.0 points new agents at langchain.agents.create_agent (toolgate_middleware serves it); the
        # prebuilt agent still works, and warns.
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = create_react_agent(model, tools=GatewayToolNode(agent_client))
    out = agent.invoke({"messages": [HumanMessage("Weather in Oslo this week, and Bergen for three days?")]})
    messages = out["messages"]
    print(transcript(messages))

    bound = {t["function"]["name"] for t in model.seen_tools}
    check("forecast" in bound, "create_react_agent took the node and bound the model to the gateway's tools")
    check([m.type for m in messages] == ["human", "ai", "tool", "tool", "ai"], "one run: human, ai, tool, tool, ai")
    days = [c["args"]["days"] for c in messages[1].tool_calls]
    check(days == [7, 3], "the AIMessage shows the repaired arguments (days as integers)")
    rules = {r["rule"] for m in messages[2:4] for r in m.additional_kwargs.get("repairs", [])}
    check(
        rules == {"string_to_integer"} and all(m.status == "success" for m in messages[2:4]), "both calls ran repaired"
    )
    ran = sorted((a["city"], a["days"]) for a in server.received)
    check(ran == [("Bergen", 3), ("Oslo", 7)], "the tool ran each call once, with integers")
    server.close()


if __name__ == "__main__":
    main()

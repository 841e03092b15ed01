"""Replies for the scripted LLM: a plan, a step, a verdict, and whether the LLM was asked."""

import json


def plan_reply(*steps):
    return {"content": json.dumps({"steps": list(steps)})}


def step(objective, tools=(), depends_on=()):
    return {"objective": objective, "tool_names": list(tools), "depends_on": list(depends_on)}


def verdict(complete=True, response="done", replan=False):
    return {
        "content": json.dumps(
            {
                "task_complete": complete,
                "reasoning": "scripted",
                "should_replan": replan,
                "response": response,
            }
        )
    }


def asked(llm, marker: str) -> bool:
    """Whether the scripted LLM has received a request containing `marker`."""
    return any(marker in json.dumps(body["messages"]) for body in llm.requests)

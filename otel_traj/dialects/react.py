"""ReAct's text format (LlamaIndex's ``ReActAgent``, LangChain's classic ReAct agents): the model
asks for a tool in its text, not with a tool call, and the tool's result goes back as user text.

A step's response is ``Thought: …`` then ``Action: <tool>`` and ``Action Input: <JSON arguments>``
(one call, no call id); the last one is ``Thought: …`` then ``Answer: <answer>`` (LangChain:
``Final Answer:``), whose answer is the text after the marker, not the whole scaffold. The result of
a call comes back as a user message ``Observation: <result>``: a tool's output, not something the
user said.
"""

from __future__ import annotations

import json
import re

from otel_traj.steps import RequestedTool

# ``Action:`` and ``Action Input:`` at the start of their lines, the tool name one word (LlamaIndex's
# parser stops it at a space or parenthesis too).
_ACTION = re.compile(r"^[ \t]*Action:[ \t]*([^\s()]+)[^\n]*\n+[ \t]*Action Input:[ \t]*", re.MULTILINE)
_ANSWER = re.compile(r"^[ \t]*(?:Final )?Answer:", re.MULTILINE)
_THOUGHT = "Thought:"
_OBSERVATION = "Observation:"
_DECODER = json.JSONDecoder()


def _action_input(text: str) -> str | None:
    """The arguments after ``Action Input:``: the JSON object there, else the rest of the line."""
    if text.startswith("{"):
        try:
            _, end = _DECODER.raw_decode(text)
        except ValueError:
            pass
        else:
            return text[:end]
    line = text.split("\n", 1)[0].strip()
    return line or None


def requested_tools(text: str) -> tuple[RequestedTool, ...]:
    """The call a ReAct step's response asks for: its first ``Action`` when no ``Answer`` comes
    before it (ReAct runs one action per step); none for other text."""
    if "Action Input:" not in text:
        return ()
    action = _ACTION.search(text)
    if action is None:
        return ()
    answer = _ANSWER.search(text)
    if answer is not None and answer.start() < action.start():
        return ()
    return (RequestedTool(name=action.group(1), arguments_text=_action_input(text[action.end() :])),)


def answer(text: str) -> str:
    """The answer of a ReAct response that starts with a ``Thought:`` and gives an ``Answer:``
    (the text after the marker); any other text unchanged."""
    if not text.lstrip().startswith(_THOUGHT):
        return text
    marker = _ANSWER.search(text)
    if marker is None or _ACTION.search(text, 0, marker.start()) is not None:
        return text
    return text[marker.end() :].strip() or text


def is_observation(text: object) -> bool:
    """Whether a user message's text is a ReAct observation: a tool's result sent back as user text."""
    return isinstance(text, str) and text.lstrip().startswith(_OBSERVATION)

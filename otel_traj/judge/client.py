"""The judge's model endpoint: any OpenAI-compatible chat-completions server, via the official client.

``openai`` is imported when a client is made, never when otel-traj is: only a process whose policy
has judges (or ``grade --judge``) needs it (``pip install 'otel-traj[judge]'``).
"""

from __future__ import annotations

from typing import Any, Protocol

from otel_traj import env


class JudgeTimeout(Exception):
    """The model did not answer within the judge's ``timeout_s``."""


class ChatModel(Protocol):
    """Answers one chat-completions request with the reply's text (None when it has none)."""

    def complete(self, model: str, messages: list[dict[str, str]], timeout_s: float) -> str | None: ...

    def close(self) -> None: ...


class OpenAIChatModel:
    """``base_url`` / ``api_key`` default to ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``. One attempt per
    call (no client retries): a judge that cannot answer in time is counted, not retried."""

    def __init__(self, *, base_url: str | None = None, api_key: str | None = None) -> None:
        try:
            import openai
        except ImportError:
            raise ValueError("LLM judges need the openai package: pip install 'otel-traj[judge]'") from None
        key = api_key or env.OPENAI_API_KEY.read()
        if not key:
            raise ValueError("LLM judges need an API key (argument or OPENAI_API_KEY)")
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=base_url or env.OPENAI_BASE_URL.read(), api_key=key, max_retries=0
        )

    def complete(self, model: str, messages: list[dict[str, str]], timeout_s: float) -> str | None:
        request: Any = messages
        try:
            response = self._client.chat.completions.create(
                model=model,
                messages=request,
                temperature=0,
                response_format={"type": "json_object"},
                timeout=timeout_s,
            )
        except self._openai.APITimeoutError:
            raise JudgeTimeout(f"no answer within {timeout_s:g} s") from None
        if not response.choices:
            return None
        content: str | None = response.choices[0].message.content
        return content

    def close(self) -> None:
        self._client.close()

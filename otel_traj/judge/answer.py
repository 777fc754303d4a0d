"""The judge's answer: JSON validated with pydantic, or the reason it is invalid."""

from __future__ import annotations

import json
from collections.abc import Collection

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

# What an explanation keeps: a score comment is read in a table cell.
MAX_EXPLANATION_CHARS = 2000


class InvalidAnswer(ValueError):
    """The model's reply is not the JSON object the judge asked for."""


class JudgeAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    score: float = Field(ge=0, le=1)
    label: str
    explanation: str = Field(min_length=1)

    @field_validator("score", mode="before")
    @classmethod
    def _a_number(cls, value: object) -> object:
        # "0.8" or true would pass lax validation; an answer that does not follow the format is invalid.
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError("must be a JSON number")
        return value

    @field_validator("label")
    @classmethod
    def _a_known_label(cls, value: str, info: ValidationInfo) -> str:
        labels: Collection[str] = (info.context or {}).get("labels", ())
        if labels and value not in labels:
            raise ValueError(f"{value!r} is not one of {', '.join(labels)}")
        return value


def _json_text(reply: str) -> str:
    """The reply without a Markdown code fence around it, which some models add anyway."""
    text = reply.strip()
    if text.startswith("```"):
        text = text.removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    return text


def parse_answer(reply: str | None, labels: Collection[str]) -> JudgeAnswer:
    """The validated answer; raises ``InvalidAnswer`` naming the field and the problem."""
    if not reply:
        raise InvalidAnswer("empty reply")
    try:
        data = json.loads(_json_text(reply))
    except ValueError as exc:
        raise InvalidAnswer(f"not JSON: {exc}") from None
    try:
        answer = JudgeAnswer.model_validate(data, context={"labels": tuple(labels)})
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "answer"
        raise InvalidAnswer(f"{where}: {first['msg'].removeprefix('Value error, ')}") from None
    if len(answer.explanation) > MAX_EXPLANATION_CHARS:
        answer = answer.model_copy(
            update={"explanation": answer.explanation[: MAX_EXPLANATION_CHARS - 1] + "…"}
        )
    return answer

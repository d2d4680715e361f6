"""What a chat model's server answered when it holds no reply: named, not an ``IndexError``.

An OpenAI-compatible server (a gateway, a proxy) may answer HTTP 200 with ``"choices": []`` or
with an HTML page; langchain-openai then raises ``IndexError: list index out of range`` or
``Unexpected response type ... got str``, neither naming the server. A refusal (``refusal``,
content null) reads as an empty answer. ``holodeck-rag chat`` says each in one line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import BaseCallbackHandler

from langchain_holodeck._redact import mask_url_password
from langchain_holodeck.tools.formatting import snippet

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage
    from langchain_core.outputs import LLMResult

    from langchain_holodeck.config.models import ChatModelConfig


class ModelReplies(BaseCallbackHandler):
    """Watches the model's replies to one question: was one of them empty (no choices)?"""

    def __init__(self) -> None:
        self.empty = False
        """A reply held no generation: an OpenAI-compatible ``"choices": []``."""

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        if not all(response.generations):
            self.empty = True


def unreadable_answer(error: Exception, config: ChatModelConfig, *, empty: bool) -> str | None:
    """The line for a model server's answer that holds no reply, naming server and model.

    An HTTP 200 with ``"choices": []`` (a gateway's empty answer) failed as ``IndexError: list
    index out of range``; a body that is not JSON (an HTML error page) as langchain-openai's
    ``Unexpected response type ... got str`` without the URL. None for any other error.
    """
    who = model_server(config)
    text = " ".join(str(error).split())
    if empty and isinstance(error, IndexError):
        return f"{who} answered with no choices (an empty answer); ask again, or check the server."
    if isinstance(error, ValueError) and text.startswith("Unexpected response type"):
        body = text.partition("got str: ")[2] or text  # langchain-openai's preview of the body
        return f"{who} answered with a body that is not JSON: {snippet(body, 80)}"
    return None


def model_server(config: ChatModelConfig) -> str:
    """``the model server <url> (model 'm')``, or ``the openai API (model 'm')`` without one."""
    server = (
        f"the model server {mask_url_password(str(config.base_url))}"
        if config.base_url
        else f"the {config.provider} API"
    )
    return f"{server} (model {config.name!r})"


def refusal(message: BaseMessage) -> str:
    """The model's refusal (OpenAI's ``refusal``, content null) as the answer, else ``""``."""
    said = message.additional_kwargs.get("refusal")
    return f"(the model refused: {said})" if isinstance(said, str) and said.strip() else ""

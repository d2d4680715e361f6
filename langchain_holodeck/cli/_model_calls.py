r"""Each call a ``chat`` agent makes to its model: bounded in all, its reply made text.

``model.timeout`` reaches the provider's client, whose HTTP library (httpx) times each network
read, not the answer: a server that sent its headers and then one byte a second was waited for
until its body was complete (hours), where a silent one fails at the timeout. ``ChatModelCalls``
waits for each model call (a question makes one per tool-calling round) at most
``model_call_deadline`` seconds: ``model.timeout`` for each try the client makes, its pauses
between tries, and ``DEADLINE_GRACE``. A server that answers a try with a ``Retry-After`` (HTTP
429, rate-limited) is waited for as long as it asks, which the openai client honours up to
``LONGEST_RETRY_AFTER``: each such pause is added to the call's deadline, seen by a response
hook on the client's HTTP client (``watch_retry_after``; other providers' clients keep the
bound without it). Past the deadline the call is abandoned (``call_with_deadline``: it ends
when the server stops sending, or at the client's next read timeout) and the question fails in
one line, which says so when the server rate-limited the call; the session goes on.

A reply holding a lone surrogate (``"\ud800"`` in the server's JSON: valid JSON, not text) is
kept with U+FFFD in its place, and one WARNING: no UTF-8 stdout prints such a character and no
request encodes it, so the answer ended ``chat`` with a traceback, or, kept in the history,
failed every later question.

Private to ``chat.py``, which imports it once langchain (the ``agents`` extra) is known to be
installed.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import AgentMiddleware, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage

from langchain_holodeck._deadline import call_with_deadline
from langchain_holodeck._text_decoding import replaced_lone_surrogates
from langchain_holodeck.cli._model_replies import model_server
from langchain_holodeck.errors import HolodeckError

if TYPE_CHECKING:
    from langchain.agents.middleware import ModelRequest

    from langchain_holodeck.config.models import ChatModelConfig

logger = logging.getLogger(__name__)

CLIENT_RETRIES = 2
"""Retries of a model whose client keeps its default (langchain-openai's ``max_retries=None``):
the openai client's, as the anthropic client's."""
FIRST_RETRY_PAUSE = 0.5
"""Seconds the openai (and anthropic) client waits before its first retry; doubled at each."""
LONGEST_RETRY_PAUSE = 8.0
"""The longest of those pauses."""
LONGEST_RETRY_AFTER = 120.0
"""The longest ``Retry-After`` the openai client waits for before a retry (its
``MAX_RETRY_AFTER_DELAY``: 2 minutes); past it the client does not retry, and the call ends."""
RATE_LIMITED = 429
"""The HTTP status of a rate-limited request."""
DEADLINE_GRACE = 1.0
"""Seconds past the tries and pauses before a call still answering is abandoned: a server that
sends nothing is timed out by the client itself first (``Request timed out.``), as before."""


def client_retries(llm: object) -> int:
    """How many times ``llm``'s client retries a request (its ``max_retries``, else 2)."""
    retries = getattr(llm, "max_retries", None)
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        return CLIENT_RETRIES
    return retries


def model_call_deadline(timeout: float, retries: int) -> float:
    """Seconds one model call may take in all: 8.5 at ``timeout`` 2 and 2 retries.

    ``timeout`` for each of the ``retries + 1`` tries, the client's pauses between them (at
    most 0.5 s, then 1, 2... up to 8) and ``DEADLINE_GRACE``.
    """
    pauses = sum(min(FIRST_RETRY_PAUSE * 2**n, LONGEST_RETRY_PAUSE) for n in range(retries))
    return (retries + 1) * timeout + pauses + DEADLINE_GRACE


@dataclass
class ServerWaits:
    """What the model's server asked one model call to wait (its ``Retry-After`` pauses)."""

    seconds: float = 0.0
    """The pauses asked for, in all: added to the call's deadline."""
    rate_limited: bool = False
    """Whether a try was answered HTTP 429."""
    retry_after: float | None = None
    """The last ``Retry-After`` asked for, in seconds."""


_WAITS: ContextVar[ServerWaits | None] = ContextVar("holodeck_model_call_waits", default=None)
"""The running model call's ``ServerWaits`` (``None`` outside one): the hook's only state."""


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds a response asks its client to wait, ``None`` when it asks nothing.

    ``retry-after-ms``, else ``retry-after`` (seconds, or an HTTP date), as the openai client
    reads them.
    """
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            try:
                seconds = parsedate_to_datetime(value).timestamp() - time.time()
            except (TypeError, ValueError):
                continue
        if math.isfinite(seconds):
            return seconds
    return None


def _note_response(response: Any) -> None:
    """The HTTP client's response hook: the running model call's waits, as the server asks.

    A ``Retry-After`` within the client's limit lengthens the call's deadline; a 429 marks it
    rate-limited. Outside a model call it does nothing.
    """
    waits = _WAITS.get()
    if waits is None:
        return
    if response.status_code == RATE_LIMITED:
        waits.rate_limited = True
    pause = retry_after(response.headers) if response.status_code >= 400 else None
    if pause is not None and 0 < pause <= LONGEST_RETRY_AFTER:
        waits.seconds += pause
        waits.retry_after = pause


def watch_retry_after(llm: object) -> bool:
    """Hook ``llm``'s HTTP client so each ``Retry-After`` lengthens a call's deadline.

    The client is langchain-openai's (``root_client``); ``False`` when ``llm`` has none. The
    hook reads only the running call's ``ServerWaits`` (a context variable), so a client shared
    with another model is left as it answers.
    """
    http = getattr(getattr(llm, "root_client", None), "_client", None)
    hooks = getattr(http, "event_hooks", None)
    if not isinstance(hooks, Mapping):
        return False
    responses = list(hooks.get("response") or [])
    if _note_response not in responses:
        http.event_hooks = {**hooks, "response": [*responses, _note_response]}  # type: ignore[union-attr]  # an httpx client
    return True


class ChatModelCalls(AgentMiddleware):  # type: ignore[type-arg]  # any state
    """Each model call of the agent: within its deadline, and its reply UTF-8 text.

    The innermost middleware (last in the list): only the model's request is timed, and the
    history keeps the reply as cleaned. ``chat`` runs the agent synchronously, so only the
    sync hook is implemented.

    Key init args:
        config: The ``model:`` section (its ``timeout``, and the server and model an error
            names).
        retries: How many times the model's client retries a request (``client_retries``).
    """

    def __init__(self, config: ChatModelConfig, *, retries: int) -> None:
        super().__init__()
        self.config = config
        """The ``model:`` section."""
        self.retries = retries
        """The client's retries of one request."""
        self.deadline = model_call_deadline(config.timeout, retries)
        """Seconds one model call may take in all."""

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """The model's reply within the deadline and its server's pauses, its text cleaned.

        Raises:
            HolodeckError: When the model gave no complete answer within the deadline; the
                message names the server, the model, the limit, and a rate limit it met.
        """
        waits = ServerWaits()
        token = _WAITS.set(waits)  # the call's thread runs in a copy of this context
        try:
            response = call_with_deadline(
                partial(handler, request),
                self.deadline,
                what="the model request",
                extension=lambda: waits.seconds,
            )
        except TimeoutError as error:  # the clients' own (openai's, httpx's) are not one
            raise HolodeckError(self._late(waits)) from error
        finally:
            _WAITS.reset(token)
        messages = [self._text_only(message) for message in response.result]
        return ModelResponse(result=messages, structured_response=response.structured_response)

    def _late(self, waits: ServerWaits) -> str:
        tries = self.retries + 1
        bound = (
            f"model.timeout: {self.config.timeout:g} s for each of the client's {tries} "
            f"{'try' if tries == 1 else 'tries'}, and its pauses between them"
        )
        if waits.seconds:
            bound += f", with the {waits.seconds:g} s the server asked for in Retry-After"
        within = f"within {self.deadline + waits.seconds:g} s ({bound})"
        if waits.rate_limited:
            asked = f", Retry-After: {waits.retry_after:g} s" if waits.retry_after else ""
            return (
                f"{model_server(self.config)} rate-limited the call (HTTP 429{asked}) and "
                f"gave no complete answer to its retries {within}; ask again once the rate "
                "limit allows, or raise the limit on the server."
            )
        return (
            f"{model_server(self.config)} gave no complete answer {within}; ask again, "
            "or check the server."
        )

    def _text_only(self, message: BaseMessage) -> BaseMessage:
        """``message`` with each lone surrogate of its text, tool calls and extras spelt U+FFFD."""
        fields: dict[str, Any] = {
            "content": message.content,
            "additional_kwargs": message.additional_kwargs,
        }
        if isinstance(message, AIMessage):
            fields["tool_calls"] = message.tool_calls
            fields["invalid_tool_calls"] = message.invalid_tool_calls
        found = [0]
        cleaned = {name: _cleaned(value, found) for name, value in fields.items()}
        if not found[0]:
            return message
        logger.warning(
            "%s answered %d lone surrogate escape(s) (half of a UTF-16 pair, not text); "
            "replaced with U+FFFD.",
            model_server(self.config),
            found[0],
        )
        return message.model_copy(update=cleaned)


def _cleaned(value: object, found: list[int]) -> Any:
    """``value`` (JSON-like), its strings' lone surrogates spelt U+FFFD; counted in ``found``.

    Strings, lists, tuples and dicts (keys too) are walked; anything else is kept.
    """
    if isinstance(value, str):
        text, count = replaced_lone_surrogates(value)
        found[0] += count
        return text
    if isinstance(value, list | tuple):
        return type(value)(_cleaned(item, found) for item in value)
    if isinstance(value, dict):
        return {_cleaned(key, found): _cleaned(item, found) for key, item in value.items()}
    return value

"""``Memory``: the conversation an agent carries from one run to the next.

A run starts from the memory's messages (after the system prompt) and, when it finishes
with an answer, adds its own: the user's prompt, the intermediate steps when the agent saves
them (``save_intermediate_steps``), and the answer. Step notes and retry instructions are
never saved. Runs that fail add nothing. Several runs may share one memory; each adds its
messages at once, under a lock.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable

from backends import Message
from backends.messages import MESSAGE_TYPES
from ruleengine import PolicyError

__all__ = ["Memory"]


class Memory:
    """An append-only conversation shared by the runs of an agent."""

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self._messages: tuple[Message, ...] = _checked(messages)
        self._lock = threading.Lock()

    @property
    def messages(self) -> tuple[Message, ...]:
        """Every message so far, oldest first."""
        return self._messages

    def add(self, *messages: Message) -> None:
        """Append ``messages`` (all at once)."""
        checked = _checked(messages)
        with self._lock:
            self._messages = (*self._messages, *checked)

    def clone(self) -> Memory:
        """A new memory holding the same messages, independent afterwards (``agent.clone``)."""
        twin = copy.copy(self)  # a subclass stays itself
        twin._lock = threading.Lock()
        return twin

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._messages = ()

    def __len__(self) -> int:
        return len(self._messages)

    def __repr__(self) -> str:
        return f"Memory(<{len(self._messages)} messages>)"


def _checked(messages: Iterable[Message]) -> tuple[Message, ...]:
    if isinstance(messages, str | bytes) or not isinstance(messages, Iterable):
        raise PolicyError(f"memory: messages=`{messages!r:.60}` must be a list of messages")
    found = tuple(messages)
    for index, message in enumerate(found):
        if not isinstance(message, MESSAGE_TYPES):
            raise PolicyError(
                f"memory: message {index} is `{message!r:.60}`, not a message",
                hint="use `UserMessage`, `AssistantMessage`, `ToolResultMessage` (backends)",
            )
    return found

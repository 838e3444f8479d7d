"""agent: the thin agent loop — tools, the gate, events — where every step obeys the pass."""

from agent.context import AgentOutput
from agent.errors import ListenerError, MaxIterationsError, RetryLimitError, ToolArgumentsError
from agent.events import (
    ConflictEvent,
    Deny,
    Emitter,
    Event,
    EventKind,
    FinalAnswerEvent,
    Listener,
    ModelRequestEvent,
    ModelResponseEvent,
    RetryEvent,
    RunFinishEvent,
    RunStartEvent,
    StepStartEvent,
    ToolDeniedEvent,
    ToolErrorEvent,
    ToolRefusedEvent,
    ToolStartEvent,
    ToolSuccessEvent,
)
from agent.gate import Admitted, Gate, Refused
from agent.handoff import HandoffInput, HandoffTool
from agent.memory import Memory
from agent.permission import PermissionListener, ask, terminal_handler
from agent.run_context import RunContext
from agent.runner import RequirementAgent
from agent.stream import AnswerDelta, AnswerDiscarded, RunStream, StreamItem
from agent.templates import Templates
from agent.tools import FinalAnswerInput, FinalAnswerTool, Tool, tool
from agent.trajectory import TrajectoryLogger

__all__ = [
    "Admitted",
    "AgentOutput",
    "AnswerDelta",
    "AnswerDiscarded",
    "ConflictEvent",
    "Deny",
    "Emitter",
    "Event",
    "EventKind",
    "FinalAnswerEvent",
    "FinalAnswerInput",
    "FinalAnswerTool",
    "Gate",
    "HandoffInput",
    "HandoffTool",
    "Listener",
    "ListenerError",
    "MaxIterationsError",
    "Memory",
    "ModelRequestEvent",
    "ModelResponseEvent",
    "PermissionListener",
    "Refused",
    "RequirementAgent",
    "RetryEvent",
    "RetryLimitError",
    "RunContext",
    "RunFinishEvent",
    "RunStartEvent",
    "RunStream",
    "StepStartEvent",
    "StreamItem",
    "Templates",
    "Tool",
    "ToolArgumentsError",
    "ToolDeniedEvent",
    "ToolErrorEvent",
    "ToolRefusedEvent",
    "ToolStartEvent",
    "ToolSuccessEvent",
    "TrajectoryLogger",
    "ask",
    "terminal_handler",
    "tool",
]

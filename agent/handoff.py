"""Handoff: an agent called as a tool of another (``agent.as_tool(name, description)``).

The outer agent's requirements decide when the tool may be called, like any tool; the inner
agent's own requirements govern its run; the inner answer is the tool's output, and a failed
inner run (a conflict, a budget, a backend error) is an ``error`` step of the outer run. The
inner run's events carry the outer path and bubble up to the outer agent's listeners, so a
trajectory shows them nested under the outer step.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent.context import RunnableAgent
from agent.tools import Tool
from ruleengine import PolicyError, validate

__all__ = ["HandoffInput", "HandoffTool"]


class HandoffInput(BaseModel):
    """What the outer model sends the inner agent."""

    model_config = ConfigDict(extra="forbid")

    task: str = Field(description="The task for the agent, with everything it needs to know.")
    """The inner run's prompt."""


class HandoffTool(Tool):
    """A tool that runs another agent on a task and answers with its answer."""

    def __init__(
        self,
        agent: RunnableAgent,
        *,
        name: str | None = None,
        description: str | None = None,
        max_iterations: int = 20,
        max_retries_per_step: int = 3,
        total_max_retries: int = 20,
    ) -> None:
        if not (
            callable(getattr(agent, "run", None)) and isinstance(getattr(agent, "name", None), str)
        ):
            raise PolicyError(f"HandoffTool: `{agent!r:.60}` is not a `RequirementAgent`")
        tool_name = name if name is not None else agent.name
        text = (
            description
            if description is not None
            else agent.description or f"Hand a task over to the `{agent.name}` agent."
        )
        super().__init__(tool_name, text, HandoffInput)
        self.agent = agent
        """The agent that runs the task."""
        owner = f"tool `{tool_name}`"
        self.limits = {
            "max_iterations": validate.integer(
                max_iterations, name="max_iterations", owner=owner, least=1
            ),
            "max_retries_per_step": validate.integer(
                max_retries_per_step, name="max_retries_per_step", owner=owner
            ),
            "total_max_retries": validate.integer(
                total_max_retries, name="total_max_retries", owner=owner
            ),
        }
        """The inner run's budgets."""

    async def run(self, input: BaseModel) -> Any:
        """Run the inner agent on the task; its answer is the output."""
        assert isinstance(input, HandoffInput)
        out = await self.agent.run(input.task, **self.limits)
        return out.answer

"""Re-exports `askgate.prompt`, where the prompt value types and the `Prompter` protocol
live (a leaf module, so the gate and the forwarding protocol need not import prompters/)."""

from askgate.prompt import (
    NoPrompter,
    Prompter,
    PromptReply,
    PromptRequest,
    PromptState,
    unavailable_reason,
)

__all__ = [
    "NoPrompter",
    "PromptReply",
    "PromptRequest",
    "PromptState",
    "Prompter",
    "unavailable_reason",
]

"""How an ask reaches a human."""

from askgate.prompt import NoPrompter, Prompter, PromptReply, PromptRequest, PromptState

__all__ = ["NoPrompter", "PromptReply", "PromptRequest", "PromptState", "Prompter"]

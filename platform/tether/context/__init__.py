"""The context builder: what the chat model should know right now, within a budget."""

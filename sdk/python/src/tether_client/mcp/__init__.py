"""Tether as memory for agents: an MCP server bound to one relationship
(``tether-mcp``, also ``tether mcp``). Needs the ``mcp`` extra."""

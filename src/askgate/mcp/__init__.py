"""The MCP gateway: `askgate mcp`, a proxy that decides every MCP call and its arguments."""

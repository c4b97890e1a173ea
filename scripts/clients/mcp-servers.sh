# Real MCP servers the gateway tests drive (tests/test_mcp_*.py): the reference filesystem
# server (stdio) and the reference "everything" server (its Streamable HTTP mode), pinned.
install_npm mcp-server-filesystem 2026.8.31 "@modelcontextprotocol/server-filesystem@2026.8.31"
install_npm mcp-server-everything 2026.8.31 "@modelcontextprotocol/server-everything@2026.8.31"

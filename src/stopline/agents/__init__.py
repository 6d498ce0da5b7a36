"""AI agents: the agent desk (what an agent may ask), the MCP server, and the approval guard."""

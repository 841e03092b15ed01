"""Tools from MCP servers: the client pool a worker holds (`client`), what the pool records in
the database (`store`), tool discovery and the Tool rows (`discovery`) and mcp_config.json
import and export (`config`)."""

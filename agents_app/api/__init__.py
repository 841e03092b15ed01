"""The programs' front end: the REST API (django-ninja, /api/v1) and AgentDesk's own MCP server
(/mcp), side by side per domain. Each domain is a package, `api/<domain>/`: its REST routes
(`rest`), its MCP tools (`mcp`) and the shapes both answer with (`schemas`), all built on the
domain's services, selectors and presenters (agents_app/<domain>/); an MCP module never
imports a REST module, and nothing here imports the pages (agents_app.web). Shared by all:
the NinjaAPI with its error handlers (`site`), the error envelope (`errors`), authentication
(`auth`), common schemas (`schemas`), paging (`pagination`), the health check (`health`), the
MCP server and how a tool reaches Django (`mcp_server`) and its HTTP endpoint (`mcp_http`)."""

"""A small real MCP memory server, built with the official `mcp` SDK, for the `mcp` agent's tests.

Tools (by default): ``add_memory(text, user_id)`` stores a text under a user id;
``search_memory(query, user_id, limit)`` returns the user's memories that share the most
words with the query, as a JSON list of ``{"memory", "score"}``. Memories live in this
process (one server per sample over stdio; one per test over streamable HTTP, where the
user id keeps samples apart).

    python tests/mcp_memory_server.py                                  # stdio
    python tests/mcp_memory_server.py --transport streamable-http --port 8765   # http://127.0.0.1:8765/mcp

Variations the tests use: ``--names remember,recall`` (other tool names), ``--no-user``
(no user id argument), ``--plain`` (search answers plain text, one memory per line),
``--only NAME`` (offer one unrelated tool only).
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

WORD = re.compile(r"\w+")
STOP = frozenset(
    "a an and are did do does i in is it me my of on the to was what when where which who with you".split()
)


def words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if w not in STOP}


def build(add_name: str, search_name: str, with_user: bool, plain: bool, only: str | None) -> MCPServer:
    try:  # mcp 2.x
        from mcp.server.mcpserver import MCPServer as Server
    except ImportError:  # mcp 1.x
        # the type check sees mcp 2.x (pyproject: mcp>=2), where this module is gone
        from mcp.server.fastmcp import FastMCP as Server  # type: ignore[attr-defined,no-redef]

    server = Server("memplug-test-memory")
    memories: dict[str, list[str]] = defaultdict(list)

    if only:

        @server.tool(name=only, description="Not a memory tool.")
        def unrelated(x: int) -> int:
            return x

        return server

    def add(text: str, user_id: str = "default") -> str:
        memories[user_id].append(text)
        return f"stored memory {len(memories[user_id])} for {user_id}"

    def search(query: str, user_id: str = "default", limit: int = 5) -> str:
        asked = words(query)
        scored = [(len(asked & words(m)), i, m) for i, m in enumerate(memories[user_id])]
        hits = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))[:limit]
        if plain:
            return "\n".join(m for _, _, m in hits)
        return json.dumps([{"memory": m, "score": float(score)} for score, _, m in hits])

    if with_user:
        server.tool(name=add_name, description="Store a memory for a user.")(add)
        server.tool(name=search_name, description="Search a user's memories.")(search)
    else:

        def add_one(text: str) -> str:
            return add(text)

        def search_one(query: str, limit: int = 5) -> str:
            return search(query, limit=limit)

        server.tool(name=add_name, description="Store a memory.")(add_one)
        server.tool(name=search_name, description="Search the memories.")(search_one)
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=("stdio", "streamable-http"), default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--names", default="add_memory,search_memory", help="ADD,SEARCH tool names")
    parser.add_argument("--no-user", action="store_true", help="tools without a user_id argument")
    parser.add_argument("--plain", action="store_true", help="search answers plain text lines")
    parser.add_argument("--only", default=None, help="offer only this one unrelated tool")
    args = parser.parse_args()
    add_name, search_name = args.names.split(",")
    server = build(add_name, search_name, not args.no_user, args.plain, args.only)
    if args.transport == "stdio":
        server.run("stdio")
        return
    try:
        server.run("streamable-http", host=args.host, port=args.port)
    except TypeError:  # mcp 1.x: host and port are settings (typed here as 2.x, without them)
        server.settings.host, server.settings.port = args.host, args.port  # type: ignore[attr-defined]
        server.run("streamable-http")


if __name__ == "__main__":
    main()

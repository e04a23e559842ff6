"""``tether-mcp`` (also ``tether mcp``): serve one relationship's memory over MCP, on
stdio (desktop assistants start it as a subprocess) or streamable HTTP."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from tether_client import AsyncTether
from tether_client.mcp.server import Binding, build_server


def build_parser(prog: str = "tether-mcp") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Serve one relationship's Tether memory over MCP. The API key (a "
        "`gateway` key) comes from TETHER_API_KEY, the API from TETHER_URL.",
    )
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP: where to listen")
    parser.add_argument("--port", type=int, default=8765, help="HTTP: port (path /mcp)")
    parser.add_argument("--relationship-id", default=os.environ.get("TETHER_RELATIONSHIP_ID"))
    parser.add_argument("--user", default=os.environ.get("TETHER_USER"), help="user external id")
    parser.add_argument(
        "--persona", default=os.environ.get("TETHER_PERSONA"), help="persona external id"
    )
    parser.add_argument(
        "--creator", default=os.environ.get("TETHER_CREATOR"), help="creator external id"
    )
    parser.add_argument("--facet", default=os.environ.get("TETHER_FACET", "default"))
    parser.add_argument("--url", default=None, help="Tether's URL (default TETHER_URL)")
    return parser


async def _bound_relationship(args: argparse.Namespace) -> str:
    binding = Binding(args.relationship_id, args.user, args.persona, args.creator, args.facet)
    async with AsyncTether(base_url=args.url) as client:
        return await binding.resolve(client)


def main(argv: list[str] | None = None, prog: str = "tether-mcp") -> int:
    args = build_parser(prog).parse_args(argv)
    try:
        relationship_id = asyncio.run(_bound_relationship(args))
    except Exception as exc:  # noqa: BLE001 - a command line reports and exits
        print(f"{prog}: cannot bind a relationship: {exc}", file=sys.stderr)  # noqa: T201
        return 1
    # The client is made inside the server's own event loop (on its first tool call).
    client = AsyncTether(base_url=args.url)
    server = build_server(client, relationship_id)
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=args.host, port=args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())

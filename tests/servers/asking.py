"""An MCP server for miroctl's tests that asks its client during tool calls: sampling, elicitation, roots, logs.

python tests/servers/asking.py [--name N]
"""

import argparse


def build(name: str = "asking"):
    from typing import Annotated

    from mcp.server.elicitation import ElicitationResult
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.resolve import Elicit, ListRoots, Resolve, Sample
    from mcp.types import (
        Completion,
        CreateMessageResult,
        ListRootsResult,
        PromptReference,
        SamplingMessage,
        TextContent,
    )
    from pydantic import BaseModel

    server = MCPServer(name, version="1.0.0", log_level="WARNING")

    class Answer(BaseModel):
        answer: str

    def sample(question: str) -> Sample:
        return Sample([SamplingMessage(role="user", content=TextContent(type="text", text=question))], max_tokens=50)

    def elicit(question: str) -> Elicit[Answer]:
        return Elicit(question, Answer)

    def roots() -> ListRoots:
        return ListRoots()

    @server.tool()
    async def ask_model(question: str, said: Annotated[CreateMessageResult, Resolve(sample)]) -> str:
        """Ask the client's model (sampling) and return what it said."""
        return f"model said: {said.content.text}"

    @server.tool()
    async def ask_user(question: str, answer: Annotated[ElicitationResult[Answer], Resolve(elicit)]) -> str:
        """Ask the client's user (elicitation) and return the answer."""
        return f"user {answer.action}: {answer.data.answer if answer.action == 'accept' else '-'}"

    @server.tool()
    async def ask_roots(found: Annotated[ListRootsResult, Resolve(roots)]) -> str:
        """Ask the client for its roots."""
        return "roots: " + ", ".join(str(root.uri) for root in found.roots)

    @server.tool()
    async def chatty(ctx: Context) -> str:
        """Log two messages during the call."""
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await ctx.info("starting the chat")
            await ctx.warning("almost done")
        return "chatted"

    @server.prompt(name="greet", description="Greet someone.")
    def greet(person: str) -> str:
        return f"Hello {person}"

    @server.completion()
    async def complete(ref, argument, context):
        if isinstance(ref, PromptReference) and argument.name == "person":
            names = [n for n in ("alice", "albert", "bob") if n.startswith(argument.value)]
            return Completion(values=names, total=len(names), has_more=False)
        return None

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="asking")
    opts = parser.parse_args()
    build(opts.name).run("stdio")


if __name__ == "__main__":
    main()

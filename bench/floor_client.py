"""The floor: the least a client can do for one cold MCP request over stdio, in the standard library only.

    python bench/floor_client.py call TOOL JSON_ARGS -- COMMAND [ARGS...]
    python bench/floor_client.py list -- COMMAND [ARGS...]

Spawns the server, sends initialize, notifications/initialized and one tools/call or tools/list, prints
the answer's result and exits (stdin closed, the server killed at once). No checks, no
pagination, no progress: what any client must at least pay, never what a real one should do.
"""

from __future__ import annotations

import json
import subprocess
import sys


def request(ident: int, method: str, params: dict[str, object]) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}) + "\n").encode()


def answer(stdout: object, ident: int) -> dict[str, object]:
    for line in stdout:  # type: ignore[attr-defined]
        message = json.loads(line)
        if message.get("id") == ident and "method" not in message:
            return message  # type: ignore[no-any-return]
    raise SystemExit("the server closed stdout before answering")


def main(argv: list[str]) -> int:
    split = argv.index("--")
    what, command = argv[:split], argv[split + 1 :]
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "floor", "version": "0"}}
    server.stdin.write(request(1, "initialize", hello))
    server.stdin.flush()
    answer(server.stdout, 1)
    server.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    if what[0] == "call":
        server.stdin.write(request(2, "tools/call", {"name": what[1], "arguments": json.loads(what[2])}))
    else:
        server.stdin.write(request(2, "tools/list", {}))
    server.stdin.flush()
    print(json.dumps(answer(server.stdout, 2).get("result")))
    server.stdin.close()
    server.kill()  # the floor does not wait for the server to exit on its own
    server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

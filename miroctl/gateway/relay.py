"""An upstream server's own requests (sampling, elicitation, roots) and log messages, relayed to the host
whose call caused them.

The gateway shares one session per upstream among all its hosts, so a request arriving from upstream must
be matched to a call: the call that is waiting for it when the upstream asks within the call itself
(2026-07-28 input requests run in the call's own task), else the one call in flight on that server. When
no call, or several from different hosts, could have caused it, or the host cannot answer (it declared no
such capability, or its connection has no way back), the upstream gets a JSON-RPC error saying why.
Log messages follow the same matching; one that matches no call is dropped, never sent to another host.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from miroctl.gateway.subscriptions import Subscriptions

INVALID_REQUEST, INTERNAL_ERROR, MISSING_CAPABILITY = -32600, -32603, -32021
CAPABILITY = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}


@dataclass(eq=False)
class HostCall:
    """One host's call in flight on one upstream server: where that server's requests go back to."""

    server: str
    session: Any  # the host's ServerSession for this request
    request_id: Any
    # 2026-07-28 hosts are asked through an input_required result, and answer in the call's retry:
    modern: bool = False
    responses: Mapping[str, Any] = field(default_factory=dict)  # the retry's input_responses
    requests: dict[str, Any] = field(default_factory=dict)  # what to ask in an input_required result


_current: ContextVar[HostCall | None] = ContextVar("miroctl_host_call", default=None)


class Relays:
    """The calls in flight per upstream server, and the relaying of that server's requests to their hosts."""

    def __init__(self) -> None:
        self.calls: dict[str, list[HostCall]] = {}
        self.subscriptions = Subscriptions()

    @contextmanager
    def calling(
        self,
        server: str,
        session: Any,
        request_id: Any,
        modern: bool = False,
        responses: Mapping[str, Any] | None = None,
    ) -> Iterator[HostCall]:
        """Register a host's call on `server` for as long as it runs."""
        call = HostCall(server, session, request_id, modern, responses or {})
        self.calls.setdefault(server, []).append(call)
        token = _current.set(call)
        try:
            yield call
        finally:
            _current.reset(token)
            self.calls[server].remove(call)

    def host_for(self, server: str) -> HostCall | str:
        """The call a request from `server` belongs to, or why none can be told."""
        current = _current.get()
        if current is not None and current.server == server:
            return current
        calls = self.calls.get(server, [])
        if len(calls) == 1:
            return calls[0]
        if not calls:
            return f"{server} asked outside any call made through the gateway: no host to ask"
        return f"{server} has {len(calls)} calls in flight from the gateway's hosts: cannot tell which one asked"

    async def request(self, server: str, method: str, params: Any) -> Any:
        """The host's answer to an upstream's request, or ErrorData saying why there is none."""
        import mcp_types as types

        host = self.host_for(server)
        if isinstance(host, str):
            return types.ErrorData(code=INVALID_REQUEST, message=host)
        return await self.ask(host, method, params, f"the host that called {server}")

    def current(self) -> HostCall | None:
        """The host call this task serves (set by `calling`), if any."""
        return _current.get()

    async def ask(self, host: HostCall, method: str, params: Any, who: str = "the host") -> Any:
        """`method` sent to the host of `host`: its result, or ErrorData (code MISSING_CAPABILITY when the
        host declared no such capability or its connection has no way back)."""
        import mcp_types as types
        from mcp.shared.exceptions import MCPError, NoBackChannelError
        from mcp.shared.message import ServerMessageMetadata

        wanted = CAPABILITY[method]
        if not host.session.check_client_capability(types.ClientCapabilities.model_validate({wanted: {}})):
            message = f"{who} does not support {wanted} ({method})"
            return types.ErrorData(code=MISSING_CAPABILITY, message=message)
        request, result = _models(method, params)
        try:
            with warnings.catch_warnings():  # roots are deprecated as of 2026-07-28: relayed all the same
                warnings.simplefilter("ignore")
                metadata = ServerMessageMetadata(related_request_id=host.request_id)
                return await host.session.send_request(request, result, metadata=metadata)
        except NoBackChannelError:
            message = f"{who} cannot be asked {method}: its connection has no way back"
            return types.ErrorData(code=MISSING_CAPABILITY, message=message)
        except MCPError as exc:
            return types.ErrorData(code=exc.code, message=f"the host answered {method} with: {exc.message}")
        except Exception as exc:  # noqa: BLE001 - a host that went away, or one with no way back
            return types.ErrorData(code=INTERNAL_ERROR, message=f"the host could not be asked {method}: {exc}")

    async def log(self, server: str, params: Any) -> None:
        """A log message of `server`'s, to the host whose call it came during (its logger names the server)."""
        host = self.host_for(server)
        if isinstance(host, str):
            return
        logger = f"{server}/{params.logger}" if params.logger else server
        try:
            with warnings.catch_warnings():  # logging is deprecated as of 2026-07-28: relayed all the same
                warnings.simplefilter("ignore")
                await host.session.send_log_message(
                    params.level, params.data, logger=logger, related_request_id=host.request_id
                )
        except Exception:  # noqa: BLE001 - a host that went away misses the message
            return

    async def updated(self, server: str, uri: str) -> None:
        """A resource of `server`'s changed: the hosts subscribed to it are told."""
        await self.subscriptions.updated(server, uri)


def _models(method: str, params: Any) -> tuple[Any, Any]:
    """The request to send the host and the result type to expect, for each relayed method."""
    import mcp_types as types

    if method == "sampling/createMessage":
        tools = getattr(params, "tools", None)
        return types.CreateMessageRequest(params=params), (
            types.CreateMessageResultWithTools if tools else types.CreateMessageResult
        )
    if method == "elicitation/create":
        return types.ElicitRequest(params=params), types.ElicitResult
    return types.ListRootsRequest(), types.ListRootsResult

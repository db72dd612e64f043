"""``srelib serve``: check the address can be listened on, then serve the environment over
OpenEnv's protocol."""

from __future__ import annotations

from srelib.commands.options import quoted


def cmd_serve(args) -> int:
    """``srelib serve``: serve the environment once the address is known to be free."""
    from srelib.serve.server import serve

    _check_listen(args.host, args.port)
    serve(args.host, args.port, max_sessions=args.max_sessions, idle_timeout=args.idle_timeout,
          max_per_client=args.max_per_client, read_timeout=args.read_timeout,
          forwarded_allow_ips=args.forwarded_allow_ips)
    return 0


def _check_listen(host: str, port: int) -> None:
    """A ValueError naming the problem if ``host``:``port`` cannot be listened on (an unknown
    host, an address of another machine, a port taken or reserved)."""
    import socket

    try:
        family, kind, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except (OSError, UnicodeError) as exc:  # UnicodeError: a host name no resolver takes
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ValueError(f"cannot listen on {quoted(host)} port {port}: {reason.lower()}") from None

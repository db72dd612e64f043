"""Red team against a real ``srelib serve`` (the CLI, a child process) on loopback: one session
model for every route (issue 46, part 4).

* ownership: a session's id, leaked or guessed, opens nothing on any route without its token;
* the per-client cap counts every kind of session, by the peer address (not X-Forwarded-For,
  not a second spelling of the same host);
* every route caps its body before reading it (the server's peak RSS says it did not);
* a client that does not read is stopped by the write buffer's high-water mark (pings, text,
  pipelined HTTP), and a message may not come in endless frames;
* slow and oversized request heads are dropped.

The server listens on 127.0.0.1, which this machine also reaches from 127.0.0.2 (any
127.0.0.0/8 address); other spellings of a host (::1, ``::ffff:127.0.0.1``, an IPv6 /64) reach
it through a trusted proxy's X-Forwarded-For.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("openenv")

import requests  # noqa: E402

import srelib  # noqa: E402
from websockets.frames import Frame, Opcode  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from srelib.training.tiny_model import free_port  # noqa: E402
from tests.test_serve import wait_for  # noqa: E402

ROOT = Path(srelib.__file__).resolve().parents[1]  # the checkout whose server is tried
PER_CLIENT = 2
MiB = 1 << 20


class Server:
    """``srelib serve`` in a child process on 127.0.0.1 (``port``), its log in ``log``."""

    def __init__(self, tmp: Path, *options: str):
        self.port, self.log = free_port(), tmp / "serve.log"
        self.url = f"http://127.0.0.1:{self.port}"
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "srelib", "serve", "--port", str(self.port),
                 "--max-sessions", "8", "--max-per-client", str(PER_CLIENT), "--read-timeout", "2",
                 *options], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONPATH": str(ROOT)})
        wait_for(self._up, 120, "srelib serve answers /health")

    def _up(self) -> bool:
        assert self.proc.poll() is None, self.log.read_text()
        try:
            return requests.get(f"{self.url}/health", timeout=2).ok
        except requests.ConnectionError:
            return False

    def active(self) -> int:
        return requests.get(f"{self.url}/sessions", timeout=10).json()["active_sessions"]

    def idle(self) -> None:
        """Wait until no session is open (the previous test's are closed)."""
        wait_for(lambda: self.active() == 0, 15, "every session closed")

    def status(self, field: str) -> int:
        """A ``/proc/PID/status`` field in kB (VmRSS, VmHWM)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
        raise KeyError(field)

    def reset_peak(self) -> None:
        """Set the peak RSS (VmHWM) back to the RSS now (``clear_refs`` 5)."""
        Path(f"/proc/{self.proc.pid}/clear_refs").write_text("5")

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    served = Server(tmp_path_factory.mktemp("serve"))
    yield served
    served.close()


@pytest.fixture
def quiet(server):
    server.idle()
    yield server
    assert server._up(), "the server survived"


def open_session(url: str, **headers) -> tuple[str, str]:
    got = requests.post(f"{url}/sessions", headers=headers, timeout=10)
    assert got.status_code == 201, got.text
    return got.json()["session_id"], got.json()["token"]


def rpc(method: str, params: dict | None = None, request_id: int = 1) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}


def ws_url(server: Server, path: str) -> str:
    return f"ws://127.0.0.1:{server.port}{path}"


# ---- a session belongs to its opener, on every route


def _strangers(server: Server, session: str) -> dict[str, int | str]:
    """What every route answers a client that knows ``session``'s id but not its token."""
    url, guessed = server.url, {"X-Session-Token": "guessed"}
    seen: dict[str, int | str] = {}
    for who, headers in (("no token", {}), ("a guessed token", guessed)):
        seen[f"GET state, {who}"] = requests.get(f"{url}/sessions/{session}/state", headers=headers,
                                                 timeout=10).status_code
        seen[f"POST step, {who}"] = requests.post(
            f"{url}/sessions/{session}/step", headers=headers, timeout=10,
            json={"action": {"action_type": "view_alerts"}}).status_code
        seen[f"POST reset, {who}"] = requests.post(f"{url}/sessions/{session}/reset",
                                                   headers=headers, json={}, timeout=10).status_code
        seen[f"DELETE session, {who}"] = requests.delete(f"{url}/sessions/{session}",
                                                         headers=headers, timeout=10).status_code
        for method in ("openenv/session/close", "tools/call", "tools/list"):
            seen[f"POST /mcp {method}, {who}"] = requests.post(
                f"{url}/mcp", headers=headers, timeout=10,
                json=rpc(method, {"session_id": session, "name": "view_alerts",
                                  "arguments": {}})).status_code
        seen[f"DELETE /mcp, {who}"] = requests.delete(
            f"{url}/mcp", headers={**headers, "Mcp-Session-Id": session}, timeout=10).status_code
        seen[f"POST /mcp with Mcp-Session-Id, {who}"] = requests.post(
            f"{url}/mcp", headers={**headers, "Mcp-Session-Id": session}, timeout=10,
            json=rpc("tools/list")).status_code
        try:
            with connect(ws_url(server, f"/ws?session_id={session}&token=guessed"),
                         additional_headers=headers, open_timeout=10) as ws:
                ws.send(json.dumps({"type": "state"}))
                seen[f"/ws attach, {who}"] = ws.recv(timeout=10)[:60]
        except Exception as exc:  # noqa: BLE001 - the refusal is the verdict
            seen[f"/ws attach, {who}"] = type(exc).__name__ + (" 403" if "403" in str(exc) else "")
    with connect(ws_url(server, "/mcp"), open_timeout=10) as ws:
        for method in ("openenv/session/close", "tools/call"):
            ws.send(json.dumps(rpc(method, {"session_id": session, "token": "guessed"})))
            seen[f"/mcp WebSocket {method}"] = json.loads(ws.recv(timeout=10))["error"]["message"]
    return seen


def test_a_leaked_session_id_opens_nothing_on_any_route(quiet):
    """The id of an HTTP session (it is in the access log, in every URL): no route uses, closes
    or attaches to it without the token; it is where its owner left it."""
    session, token = open_session(quiet.url)
    owner = {"X-Session-Token": token}
    requests.post(f"{quiet.url}/sessions/{session}/reset", headers=owner, timeout=30,
                  json={"task": "memory_leak", "pool": "A", "seed": 1})
    requests.post(f"{quiet.url}/sessions/{session}/step", headers=owner, timeout=30,
                  json={"action": {"action_type": "view_alerts"}})
    seen = _strangers(quiet, session)
    refused = {k: v for k, v in seen.items() if v not in (404, "no such session", "InvalidStatus 403")}
    assert not refused, refused
    state = requests.get(f"{quiet.url}/sessions/{session}/state", headers=owner, timeout=10)
    assert state.status_code == 200 and state.json()["step_count"] == 1
    assert requests.delete(f"{quiet.url}/sessions/{session}", headers=owner, timeout=10).ok


def test_sessions_that_mcp_opens_belong_to_their_opener_too(quiet):
    """``openenv/session/create`` returns an id and a token: without the token its id opens
    nothing, with it every route serves it; an MCP session's handle is not a session id."""
    created = requests.post(f"{quiet.url}/mcp", json=rpc("openenv/session/create"), timeout=10).json()
    session, token = created["result"]["session_id"], created["result"]["token"]
    refused = {k: v for k, v in _strangers(quiet, session).items()
               if v not in (404, "no such session", "InvalidStatus 403")}
    assert not refused, refused
    owner = {"X-Session-Token": token}
    reset = requests.post(f"{quiet.url}/sessions/{session}/reset", headers=owner, timeout=30,
                          json={"task": "memory_leak", "pool": "A", "seed": 2})
    assert reset.status_code == 200, reset.text
    listed = requests.post(f"{quiet.url}/mcp", headers=owner, timeout=10,
                           json=rpc("tools/list", {"session_id": session}))
    assert listed.status_code == 200 and listed.json()["result"]["tools"]
    init = requests.post(f"{quiet.url}/mcp", json=rpc("initialize"), timeout=10)
    handle = init.headers["Mcp-Session-Id"]
    assert requests.get(f"{quiet.url}/sessions/{handle}/state", headers={"X-Session-Token": handle},
                        timeout=10).status_code == 404
    closed = requests.post(f"{quiet.url}/mcp", headers=owner, timeout=10,
                           json=rpc("openenv/session/close", {"session_id": session}))
    assert closed.json()["result"] == {"session_id": session, "closed": True}
    assert requests.delete(f"{quiet.url}/mcp", headers={"Mcp-Session-Id": handle}, timeout=10).ok


def test_get_routes_and_errors_show_no_other_sessions_state(quiet):
    """While a session is mid-episode, no GET route (nor a refusal) shows its id, its token
    or its episode; the token of a WebSocket attach never reaches the access log."""
    session, token = open_session(quiet.url)
    owner = {"X-Session-Token": token}
    requests.post(f"{quiet.url}/sessions/{session}/reset", headers=owner, timeout=30,
                  json={"task": "memory_leak", "pool": "A", "seed": 3})
    with connect(ws_url(quiet, f"/ws?session_id={session}&token={token}"), open_timeout=10) as ws:
        ws.send(json.dumps({"type": "state"}))
        episode = json.loads(ws.recv(timeout=10))["data"]["episode_id"]
    answers = [requests.get(f"{quiet.url}{route}", timeout=10).text
               for route in ("/state", "/sessions", "/health", "/metadata", "/schema", "/docs",
                             "/openapi.json", "/sessions/x/state")]
    answers.append(requests.post(f"{quiet.url}/mcp", json=rpc("tools/list"), timeout=10).text)
    for text in answers:
        assert session not in text and token not in text and episode not in text, text[:200]
    assert token not in quiet.log.read_text(), "the access log shows no token"
    requests.delete(f"{quiet.url}/sessions/{session}", headers=owner, timeout=10)


# ---- the per-client cap counts every kind of session, by the peer address


def _open_any(server: Server, kind: str, host: str = "127.0.0.1", headers=None):
    """Open one session of ``kind`` from the source address ``host`` (of this machine): the
    verdict, and what closes it."""
    url = server.url
    headers = headers or {}
    if kind in ("http", "mcp initialize", "mcp create"):
        session = requests.Session()
        session.mount("http://", _SourceAdapter(host))
        if kind == "http":
            got = session.post(f"{url}/sessions", headers=headers, timeout=10)
            if got.status_code != 201:
                return got.status_code, None
            body = got.json()
            return 201, lambda: session.delete(f"{url}/sessions/{body['session_id']}",
                                               headers={"X-Session-Token": body["token"]}, timeout=10)
        method = "initialize" if kind == "mcp initialize" else "openenv/session/create"
        got = session.post(f"{url}/mcp", json=rpc(method), headers=headers, timeout=10)
        if got.status_code != 200 or "error" in got.json():
            return got.status_code, None
        if kind == "mcp initialize":
            handle = got.headers["Mcp-Session-Id"]
            return 200, lambda: session.delete(f"{url}/mcp", headers={"Mcp-Session-Id": handle},
                                               timeout=10)
        result = got.json()["result"]
        return 200, lambda: session.post(f"{url}/mcp", headers={"X-Session-Token": result.get("token", "")},
                                         json=rpc("openenv/session/close",
                                                  {"session_id": result["session_id"]}), timeout=10)
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10,
                                    source_address=(host, 0))
    stack = contextlib.ExitStack()
    try:
        stack.enter_context(connect(ws_url(server, "/ws" if kind == "/ws" else "/mcp"), sock=sock,
                                    additional_headers=headers, open_timeout=10))
    except Exception as exc:  # noqa: BLE001 - the refusal is the verdict
        return 403 if "403" in str(exc) else type(exc).__name__, None
    return 101, stack.close


class _SourceAdapter(requests.adapters.HTTPAdapter):
    """requests from a given loopback source address (127.0.0.2 is another address of this
    machine)."""

    def __init__(self, host: str):
        self.host = host
        super().__init__()

    def init_poolmanager(self, *args, **kwargs):
        kwargs["source_address"] = (self.host, 0)
        super().init_poolmanager(*args, **kwargs)


KINDS = ["http", "/ws", "mcp initialize", "mcp create", "/mcp WebSocket"]


@pytest.mark.parametrize("held", KINDS)
def test_the_cap_counts_every_kind_of_session(quiet, held):
    """A client holding ``PER_CLIENT`` sessions of one kind gets no more of any kind."""
    closers = []
    try:
        for _ in range(PER_CLIENT):
            verdict, close = _open_any(quiet, held)
            assert close is not None, verdict
            closers.append(close)
        verdicts = {kind: _open_any(quiet, kind) for kind in KINDS}
        closers += [close for _verdict, close in verdicts.values() if close]
        assert {kind: v for kind, (v, _close) in verdicts.items()} == {
            "http": 429, "/ws": 403, "mcp initialize": 429, "mcp create": 429,
            "/mcp WebSocket": 403}
    finally:
        for close in closers:
            close()


def test_forwarded_headers_and_other_spellings_of_this_host_share_its_cap(quiet):
    """X-Forwarded-For (and its kin) from a peer that is not a trusted proxy is not the
    client; 127.0.0.2 is this machine as much as 127.0.0.1."""
    closers = []
    try:
        for host in ("127.0.0.1", "127.0.0.2"):
            verdict, close = _open_any(quiet, "http", host)
            assert verdict == 201
            closers.append(close)
        verdicts = {}
        for host in ("127.0.0.1", "127.0.0.2"):
            for kind in ("http", "/ws", "mcp create"):
                verdict, close = _open_any(quiet, kind, host, {"X-Forwarded-For": "203.0.113.9",
                                                                "X-Real-IP": "203.0.113.9",
                                                                "Forwarded": "for=203.0.113.9"})
                verdicts[host, kind] = verdict
                closers += [close] if close else []
        assert set(verdicts.values()) <= {429, 403}, verdicts
    finally:
        for close in closers:
            close()


def test_concurrent_opens_from_one_host_get_at_most_its_share(quiet):
    """Twelve opens at once, of every kind: the slots are counted as they are taken."""
    results, closers = [], []

    def attempt(kind):
        results.append(_open_any(quiet, kind))

    threads = [threading.Thread(target=attempt, args=(KINDS[k % len(KINDS)],)) for k in range(12)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        closers = [close for _verdict, close in results if close]
        assert len(closers) == PER_CLIENT, results
    finally:
        for close in closers:
            close()


def test_a_trusted_proxys_clients_are_counted_by_the_address_it_forwards(tmp_path):
    """With ``--forwarded-allow-ips 127.0.0.1``, X-Forwarded-For names the client: a client
    behind the proxy gets its own share, however its address is spelled (::ffff:192.0.2.7 is
    192.0.2.7; ::1 and ::ffff:127.0.0.1 are 127.0.0.1); IPv6 clients count by /64."""
    proxied = Server(tmp_path, "--forwarded-allow-ips", "127.0.0.1")
    closers = []
    try:
        def verdicts(forwarded: list[str]):
            seen = []
            for address in forwarded:
                verdict, close = _open_any(proxied, "http", headers={"X-Forwarded-For": address})
                seen.append(verdict)
                closers.extend([close] if close else [])
            return seen

        assert verdicts(["192.0.2.7", "::ffff:192.0.2.7", "192.0.2.7"]) == [201, 201, 429]
        assert verdicts(["2001:db8::1", "2001:db8::2", "2001:db8:0:0:ffff::9"]) == [201, 201, 429]
        assert verdicts(["::1", "::ffff:127.0.0.1", "127.0.0.5"]) == [201, 201, 429]
        assert verdicts(["2001:db8:0:1::1", "198.51.100.1"]) == [201, 201]
    finally:
        for close in closers:
            close()
        proxied.close()


@pytest.mark.parametrize("address, host", [
    ("::ffff:127.0.0.1", "loopback"), ("::1", "loopback"), ("127.0.0.2", "loopback"),
    ("::ffff:192.0.2.7", "192.0.2.7"), ("::ffff:c000:207", "192.0.2.7"), ("192.0.2.7", "192.0.2.7"),
    ("2001:db8::1", "2001:db8::/64"), ("2001:DB8:0:0:ffff::9", "2001:db8::/64"),
    ("fe80::1%eth0", "fe80::/64"), ("/run/srelib.sock", "/run/srelib.sock")])
def test_a_peer_address_counts_as_its_host(address, host):
    from srelib.serve.owners import host_key

    assert host_key(address) == host


def test_the_proxy_option_refuses_what_is_not_an_address():
    done = subprocess.run([sys.executable, "-m", "srelib", "serve", "--forwarded-allow-ips",
                           "127.0.0.1,localhst"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and "not an IP address or network: 'localhst'" in done.stderr


# ---- every route caps its body before reading it


ROUTES = ["POST /sessions/{session}/step", "POST /step", "POST /reset", "POST /mcp",
          "POST /sessions/{session}/reset", "POST /sessions", "POST /srelib/tasks",
          "GET /health", "DELETE /sessions/{session}"]


def _send_large(server: Server, route: str, framing: str, total: int = 200 * MiB) -> str:
    """Send ``route`` a JSON body of ``total`` bytes in 64 KiB chunks: the status line the
    server answered, or what ended the exchange."""
    method, path = route.split()
    head = [f"{method} {path} HTTP/1.1", "Host: x", "Content-Type: application/json"]
    head.append(f"Content-Length: {total}" if framing == "content-length"
                else "Transfer-Encoding: chunked")
    chunk = b'{"action": {"action_type": "view_alerts", "parameters": {"pad": "' + b"x" * 65000
    sent = 0
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        try:
            sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
            while sent < total:
                piece = chunk[: total - sent]
                sock.sendall(piece if framing == "content-length"
                             else b"%x\r\n%s\r\n" % (len(piece), piece))
                sent += len(piece)
        except (ConnectionResetError, BrokenPipeError, socket.timeout):
            pass  # the server stopped reading: its answer, if any, is waiting
        answer = b""
        try:
            while b"\r\n" not in answer:
                more = sock.recv(4096)
                if not more:
                    break
                answer += more
        except (ConnectionResetError, socket.timeout) as exc:
            return f"{type(exc).__name__} after {sent >> 20} MiB sent"
    return answer.split(b"\r\n")[0].decode() or f"closed, no answer, after {sent >> 20} MiB sent"


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
@pytest.mark.parametrize("route", ROUTES)
def test_every_route_refuses_a_200_mb_body_before_reading_it(quiet, route, framing):
    """A 200 MB body, declared or chunked, gets 413 while the server's peak RSS stays within
    a few MiB of what it was: the body was never read whole."""
    session, token = open_session(quiet.url)
    try:
        quiet.reset_peak()
        before = quiet.status("VmRSS")
        status = _send_large(quiet, route.format(session=session), framing)
        grown = (quiet.status("VmHWM") - before) / 1024
        assert status.split()[1:2] == ["413"], status
        assert grown < 16, f"peak RSS grew {grown:.0f} MB"
    finally:
        requests.delete(f"{quiet.url}/sessions/{session}", headers={"X-Session-Token": token},
                        timeout=10)


def test_a_body_just_under_the_cap_is_served(quiet):
    session, token = open_session(quiet.url)
    owner = {"X-Session-Token": token}
    try:
        requests.post(f"{quiet.url}/sessions/{session}/reset", headers=owner, timeout=30,
                      json={"task": "memory_leak", "pool": "A", "seed": 1})
        body = {"action": {"action_type": "view_alerts", "parameters": {"pad": "x" * (MiB - 200)}}}
        got = requests.post(f"{quiet.url}/sessions/{session}/step", headers=owner, json=body,
                            timeout=30)
        assert got.status_code == 200, got.text[:200]
        body["action"]["parameters"]["pad"] += "x" * 200
        got = requests.post(f"{quiet.url}/sessions/{session}/step", headers=owner, json=body,
                            timeout=30)
        assert got.status_code == 413
    finally:
        requests.delete(f"{quiet.url}/sessions/{session}", headers=owner, timeout=10)


# ---- a client that does not read, a message in endless frames


def _handshake(server: Server, path: str = "/ws") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    key = base64.b64encode(secrets.token_bytes(16)).decode()
    sock.sendall((f"GET {path} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


def _frame(opcode: Opcode, payload: bytes, fin: bool = True) -> bytes:
    return Frame(opcode, payload, fin=fin).serialize(mask=True, extensions=[])


def _flood(server: Server, sock: socket.socket, data: bytes, seconds: float) -> tuple[int, float]:
    """Send ``data`` over and over for ``seconds`` without reading: (bytes the kernel took,
    MB the server's RSS grew)."""
    before, sent, deadline = server.status("VmRSS"), 0, time.monotonic() + seconds
    sock.setblocking(False)
    pending = memoryview(data)
    while time.monotonic() < deadline:
        try:
            taken = sock.send(pending)  # a part, perhaps: the rest goes next, frames stay whole
            sent, pending = sent + taken, pending[taken:] or memoryview(data)
        except BlockingIOError:
            time.sleep(0.005)
        except (ConnectionResetError, BrokenPipeError):
            break
    time.sleep(0.5)
    return sent, (server.status("VmRSS") - before) / 1024


@pytest.mark.parametrize("what", ["pings", "state messages", "pings on /mcp"])
def test_a_client_that_never_reads_is_stopped_by_the_write_buffer(quiet, what):
    """Pings (each answered by a pong) or state messages (each answered by a reply) sent for 4 s
    by a client that reads nothing: the server stops reading it once its write buffer is past
    the high-water mark, and its memory stays put."""
    sock = _handshake(quiet, "/mcp" if what == "pings on /mcp" else "/ws")
    burst = (_frame(Opcode.PING, b"p" * 125) if what.startswith("pings")
             else _frame(Opcode.TEXT, b'{"type": "state"}')) * 500
    try:
        sent, grown = _flood(quiet, sock, burst, 4.0)
    finally:
        sock.close()
    assert grown < 24, f"RSS grew {grown:.0f} MB after {sent / MiB:.0f} MB of {what}"
    assert sent < 64 * MiB, f"the server read {sent / MiB:.0f} MB from a client that never reads"


def test_a_client_that_pipelines_http_and_never_reads_is_stopped(quiet):
    sock = socket.create_connection(("127.0.0.1", quiet.port), timeout=10)
    try:
        sent, grown = _flood(quiet, sock, b"GET /metadata HTTP/1.1\r\nHost: x\r\n\r\n" * 200, 4.0)
    finally:
        sock.close()
    assert grown < 24, f"RSS grew {grown:.0f} MB after {sent / MiB:.0f} MB of pipelined requests"


def test_a_message_in_endless_frames_closes_the_connection(quiet):
    """One text message sent as a first frame and 200,000 one-byte continuations: the
    connection is closed (1009) once it passes the frame limit, and the server's memory stays
    put (a list of one-byte buffers costs it some 40 bytes a byte)."""
    from srelib.serve.ws import MAX_FRAGMENTS

    sock = _handshake(quiet)
    try:
        sock.sendall(_frame(Opcode.TEXT, b'{"type": "st', fin=False))
        sent, grown = _flood(quiet, sock, _frame(Opcode.CONT, b"a", fin=False) * 4000, 3.0)
        sock.setblocking(True)
        sock.settimeout(10)
        reply = b""
        while len(reply) < 4:
            more = sock.recv(4096)
            if not more:
                break
            reply += more
    finally:
        sock.close()
    assert reply[:1] == b"\x88" and int.from_bytes(reply[2:4], "big") == 1009, reply[:40]
    assert sent >= (MAX_FRAGMENTS + 1) * 7 and grown < 16, (sent, grown)
    with connect(ws_url(quiet, "/ws"), open_timeout=10) as ws:  # others are served as before
        ws.send(json.dumps({"type": "state"}))
        assert json.loads(ws.recv(timeout=10))["type"] == "state"


def test_a_message_in_a_few_hundred_frames_is_served(quiet):
    message = json.dumps({"type": "reset", "data": {"task": "memory_leak", "pool": "A", "seed": 1}})
    with connect(ws_url(quiet, "/ws"), open_timeout=10) as ws:
        ws.send([message[k:k + 1] for k in range(len(message))])  # one frame per character
        assert json.loads(ws.recv(timeout=30))["type"] == "observation"


# ---- slow and oversized request heads


@pytest.mark.parametrize("head", ["slowloris", "a 1 MB header", "20,000 small headers",
                                  "a WebSocket handshake with a 1 MB header"])
def test_slow_and_oversized_request_heads_are_dropped(quiet, head):
    sock = socket.create_connection(("127.0.0.1", quiet.port), timeout=15)
    started = time.monotonic()
    try:
        if head == "slowloris":  # a header byte every 0.2 s, never finished
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
            answer = b""
            for _ in range(50):
                try:
                    sock.sendall(b"X")
                except (BrokenPipeError, ConnectionResetError):
                    break
                time.sleep(0.2)
        else:
            upgrade = (b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                       b"Sec-WebSocket-Key: " + base64.b64encode(b"k" * 16) + b"\r\n")
            extra = (b"X-Pad: " + b"a" * MiB + b"\r\n" if "1 MB" in head
                     else b"".join(b"X-%d: a\r\n" % k for k in range(20_000)))
            path = b"/ws" if "WebSocket" in head else b"/health"
            try:
                sock.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n" +
                             (upgrade if "WebSocket" in head else b"") + extra + b"\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass
        try:
            answer = sock.recv(4096)
        except ConnectionResetError:
            answer = b"reset"
    finally:
        sock.close()
    assert not answer.startswith(b"HTTP/1.1 2") and not answer.startswith(b"HTTP/1.1 101"), answer
    assert time.monotonic() - started < 15


def test_pipelined_requests_that_are_read_are_all_answered(quiet):
    """Reading held back while pipelined requests wait resumes as they are answered: 3,000
    requests (about 100 kB, past the read-ahead bound) sent at once all get their response."""
    count = 3000
    with socket.create_connection(("127.0.0.1", quiet.port), timeout=30) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n" * count)
        answers = b""
        while answers.count(b"HTTP/1.1 200") < count:
            more = sock.recv(1 << 16)
            assert more, f"closed after {answers.count(b'HTTP/1.1 200')} responses"
            answers += more

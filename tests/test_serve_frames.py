"""The served path's shortcuts against the general code they bypass: srelib's own reading and
writing of WebSocket text frames (``srelib.serve.frames``) against ``websockets``' parser, the
server's fast path against its ASGI path on a real server, plain actions and JSON text."""

from __future__ import annotations

import json
import random

import pytest

pytest.importorskip("openenv")

from websockets.frames import Frame, Opcode  # noqa: E402
from websockets.streams import StreamReader  # noqa: E402

from srelib.serve.frames import Boundaries, text_frame, whole_text  # noqa: E402
from srelib.serve.server import running  # noqa: E402

SIZES = [0, 1, 125, 126, 127, 65535, 65536, 70000]


def parse(data: bytes, *, mask: bool) -> list[Frame]:
    """The frames ``websockets`` reads from ``data``."""
    reader, frames = StreamReader(), []
    reader.feed_data(data)
    while reader.buffer:
        parser = Frame.parse(reader.read_exact, mask=mask)
        try:
            while True:
                next(parser)
        except StopIteration as done:
            frames.append(done.value)
    return frames


@pytest.mark.parametrize("mask", [False, True])
@pytest.mark.parametrize("size", SIZES)
def test_a_text_frame_reads_back_as_websockets_reads_it(size, mask):
    payload = ("é" * size).encode()[:size]
    data = text_frame(payload, mask=mask)
    [frame] = parse(data, mask=mask)
    assert (frame.opcode, frame.fin, frame.data) == (Opcode.TEXT, True, payload)
    assert whole_text(data, masked=mask, limit=None) == payload
    assert whole_text(data, masked=not mask, limit=None) is None  # masking is what the side says
    assert whole_text(data, masked=mask, limit=size - 1) is None  # past the limit
    assert whole_text(data[:-1], masked=mask, limit=None) is None if size else True
    assert whole_text(data + data, masked=mask, limit=None) is None  # two frames


@pytest.mark.parametrize("first", [0x01, 0x02, 0x09, 0x0A, 0x88, 0x82, 0x80, 0xC1, 0x91])
def test_anything_but_one_whole_text_frame_is_left_to_websockets(first):
    """Fragments, binary, control frames and reserved bits are not read here."""
    data = bytearray(text_frame(b'{"type": "state"}', mask=True))
    data[0] = first
    assert whole_text(bytes(data), masked=True, limit=None) is None


def test_boundaries_follow_frames_split_anywhere():
    rng = random.Random(7)
    frames = [text_frame(b"x" * rng.choice(SIZES), mask=rng.random() < 0.5) for _ in range(40)]
    stream, ends = b"".join(frames), set()
    at = 0
    for frame in frames:
        at += len(frame)
        ends.add(at)
    boundaries, at = Boundaries(), 0
    while at < len(stream):
        step = rng.choice([1, 2, 3, 5, 9, 100, 5000, 80000])
        boundaries.feed(stream[at:at + step])
        at = min(len(stream), at + step)
        assert boundaries.aligned == (at in ends), at


def _fragmented(ws, text: str) -> None:
    """Send ``text`` as two frames (a text frame and a continuation): the server's ASGI path."""
    ws.send([text[:len(text) // 2], text[len(text) // 2:]])


_EPISODE = {"task": "memory_leak", "pool": "A", "seed": 4, "episode_id": "e"}
_PATCHING = {"task": "memory_leak", "mode": "p2_only", "seed": 2, "episode_id": "p"}
_PATCH = {"type": "step", "data": {"action_type": "propose_patch",
                                   "parameters": {"diff": "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n"}}}
#: ``(message, answered on the fast path?)``: every step that runs on the event loop and every
#: reset of a task loaded before, valid or not; not a text action, a first reset, a patch not
#: graded yet, a draw from a suite, a state message, a frame that is not JSON.
MESSAGES = [
    ({"type": "step", "data": {"action_type": "view_alerts"}}, True),  # before any reset
    ({"type": "reset", "data": _EPISODE}, False),
    ({"type": "step", "data": {"action_type": "view_alerts"}}, True),
    ({"type": "step", "data": {"action_type": "query_logs", "target_service": "orders"}}, True),
    ({"type": "step", "data": {"action_type": "query_metrics", "target_service": "orders",
                               "parameters": {"metric": "latency"}}}, True),
    ({"type": "step", "data": {"action_type": 5}}, True),
    ({"type": "step", "data": {"action_type": "view_alerts", "extra": 1}}, True),
    ({"type": "step", "data": {"action_type": "view_alerts", "text": "x"}}, True),
    ({"type": "step", "data": {"parameters": {"1": [1, 2]}, "target_service": None}}, True),
    ({"type": "step", "data": ["view_alerts"]}, True),
    ({"type": "step", "data": None}, True),
    ({"type": "step"}, True),
    ({"type": "step", "data": {}, "more": True}, True),
    ({"type": "step", "data": {"text": "query_logs:orders"}}, False),
    ({"type": "step", "data": {"action_type": "launch_rockets"}}, True),
    ({"type": "state"}, False),
    ('{"type": "step", "data": {"action_type": NaN}}', True),
    ('{"type": "step", "data": {"action_type": "view_alerts", "action_type": 7}}', True),
    ('{"type": "step", "data": {"parameters": {"n": 123456789012345678901234567890}}}', True),
    ("{not json", False),
    ('{"type": "launch"}', False),
    ({"type": "step", "data": {"action_type": "submit_diagnosis", "target_service": "orders",
                               "parameters": {"root_cause": "memory_leak"}}}, True),
    ({"type": "step", "data": {"action_type": "view_alerts"}}, True),
    ({"type": "reset", "data": dict(_EPISODE, seed=5)}, True),  # loaded: on the loop
    ({"type": "reset", "data": {"seed": "5"}}, True),  # refused at once
    ({"type": "reset", "data": dict(_EPISODE, colour="red")}, True),
    ({"type": "reset", "data": ["memory_leak"]}, True),
    ({"type": "reset", "data": {"self": 1}}, True),  # unknown, not a clash with a parameter
    ({"type": "reset", "data": {"task": "generated", "seed": 3, "episode_id": "g"}}, False),
    ({"type": "reset", "data": _PATCHING}, False),
    (_PATCH, False),  # graded on a worker thread, then memoised
    ({"type": "reset", "data": _PATCHING}, True),
    (_PATCH, True),
    ({"type": "state"}, False),
]


def test_resets_and_steps_answered_on_the_fast_path_get_the_replies_of_the_asgi_path(
        monkeypatch):
    """Two sessions get the same messages, one as single frames (read by srelib and answered
    as they arrive) and one fragmented (through websockets, uvicorn and play_socket): every
    reply is the same text, and the fast path answers what runs on the event loop."""
    from websockets.sync.client import connect

    from srelib.env.grading import pipeline as patching
    from srelib.serve import scheduling
    from srelib.serve.ws import Lane

    answered, answer = [], Lane.answer

    def counted(lane, text):
        reply = answer(lane, text)
        answered.append(reply is not None)
        return reply

    monkeypatch.setattr(Lane, "answer", counted)
    monkeypatch.setattr(scheduling, "_STARTED", set())  # as in a fresh process
    patching._MEMO.clear()
    with running() as url:
        address = url.replace("http", "ws") + "/ws"
        with connect(address, open_timeout=10) as fast, connect(address, open_timeout=10) as slow:
            for message, _ in MESSAGES:
                text = message if isinstance(message, str) else json.dumps(message)
                fast.send(text)
                reply = fast.recv(timeout=60)
                _fragmented(slow, text)
                assert reply == slow.recv(timeout=60), text
    # the lane is asked about every whole frame of the first session, and only those
    assert answered == [lane for _, lane in MESSAGES]


def _actions():
    """Dict actions of every shape: known keys with values of any JSON type or none, extras."""
    from hypothesis import strategies as st

    scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
    values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                          | st.tuples(inner) | st.dictionaries(st.text(max_size=4) | st.integers(),
                                                               inner, max_size=3), max_leaves=8)
    names = st.none() | st.sampled_from(["view_alerts", "query_logs", "orders"]) | values
    return st.dictionaries(st.sampled_from(["action_type", "target_service", "parameters",
                                            "reasoning", "text"]), names | values, max_size=4)


def test_a_plain_action_is_sent_as_the_typed_action_would_send_it():
    from hypothesis import HealthCheck, given, settings

    from srelib.serve.remote import _plain_fields, _typed_action
    from srelib.serve.wire import dumps

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(action=_actions())
    def same(action):
        fields = _plain_fields(action)
        typed = _typed_action(action).model_dump(exclude_unset=True, exclude={"metadata"})
        if fields is not None:
            assert dumps(fields) == dumps(typed), action

    same()
    assert _plain_fields({"action_type": "query_logs", "target_service": "orders",
                          "parameters": {"lines": 5, "grep": ["a", {"b": None}]}}) is not None
    for action in [{"action_type": 5}, {"parameters": {1: 2}}, {"parameters": {"a": (1,)}},
                   {"parameters": []}, "query_logs:orders", ["view_alerts"]]:
        assert _plain_fields(action) is None, action


def test_json_text_writes_keys_that_are_not_strings_as_the_standard_library_does():
    from srelib.serve.wire import dumps

    value = {1: "a", "b": {2.5: None, True: [1]}, "c": "d"}
    assert dumps(value) == json.dumps(value, separators=(",", ":"))


@pytest.mark.parametrize("reply", [b"\xff\xfe not UTF-8", b"{not json", b"[1, 2]", "[1, 2]"])
def test_a_reply_that_is_not_a_json_object_is_a_connection_error(reply):
    """A peer that answers with anything but a JSON object (invalid UTF-8, not JSON, another
    JSON value; binary or text) gets a ConnectionError that says so, and the link is dropped."""
    import threading

    from websockets.sync.server import serve

    from srelib.serve.remote import RemoteEnv

    def answer(ws):
        for _ in ws:
            ws.send(reply)

    with serve(answer, "127.0.0.1", 0) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        env = RemoteEnv(f"http://127.0.0.1:{server.socket.getsockname()[1]}")
        with pytest.raises(ConnectionError, match="the server's reply is not"):
            env.reset(task="memory_leak", pool="A", seed=1)
        assert env._link is None
        server.shutdown()

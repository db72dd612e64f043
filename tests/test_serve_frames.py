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


MESSAGES = [
    {"type": "step", "data": {"action_type": "view_alerts"}},  # before any reset
    {"type": "reset", "data": {"task": "memory_leak", "pool": "A", "seed": 4, "episode_id": "e"}},
    {"type": "step", "data": {"action_type": "view_alerts"}},
    {"type": "step", "data": {"action_type": "query_logs", "target_service": "orders"}},
    {"type": "step", "data": {"action_type": "query_metrics", "target_service": "orders",
                              "parameters": {"metric": "latency"}}},
    {"type": "step", "data": {"action_type": 5}},
    {"type": "step", "data": {"action_type": "view_alerts", "extra": 1}},
    {"type": "step", "data": {"action_type": "view_alerts", "text": "x"}},
    {"type": "step", "data": {"parameters": {"1": [1, 2]}, "target_service": None}},
    {"type": "step", "data": ["view_alerts"]},
    {"type": "step", "data": None},
    {"type": "step"},
    {"type": "step", "data": {}, "more": True},
    {"type": "step", "data": {"text": "query_logs:orders"}},
    {"type": "step", "data": {"action_type": "launch_rockets"}},
    {"type": "state"},
    '{"type": "step", "data": {"action_type": NaN}}',
    '{"type": "step", "data": {"action_type": "view_alerts", "action_type": 7}}',
    '{"type": "step", "data": {"parameters": {"n": 123456789012345678901234567890}}}',
    "{not json",
    '{"type": "launch"}',
    {"type": "step", "data": {"action_type": "submit_diagnosis", "target_service": "orders",
                              "parameters": {"root_cause": "memory_leak"}}},
    {"type": "step", "data": {"action_type": "view_alerts"}},
]


def test_steps_answered_on_the_fast_path_get_the_replies_of_the_asgi_path(monkeypatch):
    """Two sessions get the same messages, one as single frames (read by srelib and answered
    as they arrive) and one fragmented (through websockets, uvicorn and play_socket): every
    reply is the same text."""
    from websockets.sync.client import connect

    from srelib.serve.ws import Lane

    answered, answer = [], Lane.answer

    def counted(lane, text):
        reply = answer(lane, text)
        answered.extend([text] if reply is not None else [])
        return reply

    monkeypatch.setattr(Lane, "answer", counted)
    with running() as url:
        address = url.replace("http", "ws") + "/ws"
        with connect(address, open_timeout=10) as fast, connect(address, open_timeout=10) as slow:
            for message in MESSAGES:
                text = message if isinstance(message, str) else json.dumps(message)
                fast.send(text)
                _fragmented(slow, text)
                assert fast.recv(timeout=60) == slow.recv(timeout=60), text
    # every step of the first session but the text action (a worker thread's), and only those
    texts = [m if isinstance(m, str) else json.dumps(m) for m in MESSAGES]
    assert answered == [t for t in texts if t.startswith('{"type": "step"') and ":orders" not in t]


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

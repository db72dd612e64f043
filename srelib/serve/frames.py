"""WebSocket frames of the one kind OpenEnv's protocol exchanges, read and written without the
general parser: a whole text message in one frame.

``websockets``' sans-I/O parser reads every frame through generator-based coroutines and builds a
``Frame`` object for it; for a small JSON message that cost the server and the client more CPU
than the JSON itself. The server (:mod:`srelib.serve.ws`) and srelib's client
(:mod:`srelib.serve.client`) read a chunk of bytes here when it is exactly one unfragmented text
frame that starts where the previous chunk's frames ended, and hand anything else (control
frames, fragments, partial frames, reserved bits, oversized frames) to ``websockets`` as before;
:class:`Boundaries` tells where frames end in the bytes given to ``websockets``, so that it is
never bypassed in the middle of a frame.
"""

from __future__ import annotations

import secrets
import struct

from srelib.extras import require

require("websockets", "srelib.serve.frames")
from websockets.speedups import apply_mask

_TEXT_FIN = 0x81  # FIN, no reserved bit, opcode 1 (text)
_MASKED = 0x80


def text_frame(payload: bytes, *, mask: bool) -> bytes:
    """One FIN text frame carrying ``payload`` (UTF-8); a client masks it (RFC 6455 5.3) with a
    fresh random key, as ``websockets`` does."""
    length, bit = len(payload), _MASKED if mask else 0
    if length < 126:
        head = bytes((_TEXT_FIN, bit | length))
    elif length < 1 << 16:
        head = struct.pack("!BBH", _TEXT_FIN, bit | 126, length)
    else:
        head = struct.pack("!BBQ", _TEXT_FIN, bit | 127, length)
    if not mask:
        return head + payload
    key = secrets.token_bytes(4)
    return head + key + apply_mask(payload, key)


def _header(data: bytes, at: int = 0) -> tuple[int, int] | None:
    """``(header size, payload length)`` of the frame starting at ``data[at]``, or None while
    the bytes that give its length have not all come."""
    if len(data) - at < 2:
        return None
    second = data[at + 1]
    length, size = second & 0x7F, 6 if second & _MASKED else 2
    if length == 126:
        if len(data) - at < 4:
            return None
        length, size = int.from_bytes(data[at + 2:at + 4], "big"), size + 2
    elif length == 127:
        if len(data) - at < 10:
            return None
        length, size = int.from_bytes(data[at + 2:at + 10], "big"), size + 8
    return size, length


def whole_text(data: bytes, *, masked: bool, limit: int | None) -> bytes | None:
    """The payload (unmasked) of ``data`` when it is exactly one FIN text frame without reserved
    bits, masked as ``masked`` says, of at most ``limit`` bytes (None: any); else None."""
    if len(data) < 2 or data[0] != _TEXT_FIN or bool(data[1] & _MASKED) != masked:
        return None
    size, length = _header(data) or (0, -1)
    if size + length != len(data) or (limit is not None and length > limit):
        return None
    if masked:
        return apply_mask(data[size:], data[size - 4:size])
    return data[size:]


class Boundaries:
    """Where frames end in a stream of WebSocket bytes, fed chunk by chunk (only the frames'
    lengths are read; ``websockets`` judges everything else)."""

    def __init__(self) -> None:
        self._owed = 0  # bytes of the current frame still to come
        self._head = b""  # the start of a frame whose length has not all come

    @property
    def aligned(self) -> bool:
        """Did the bytes fed so far end exactly where a frame ends?"""
        return not self._owed and not self._head

    def feed(self, data: bytes) -> None:
        data = self._head + data if self._head else data
        at, self._head = self._owed, b""
        while at < len(data):
            header = _header(data, at)
            if header is None:
                self._head, at = data[at:], len(data)
                break
            at += header[0] + header[1]
        self._owed = at - len(data)

"""memory_leak, held out: @n@ event subscriptions; one-shot handlers arrive, and unsubscribing now leaves
the handler behind (``get`` for ``pop``), so handlers pile up."""

from ..shapes import Shape

_SOURCE = '''"""Subscribers to @n@ events: handlers registered under a token, called on publish."""

import itertools


class @N@Events:
    """Handlers subscribed to @n@ events."""

    def __init__(self):
        self._handlers = {}
        self._tokens = itertools.count(1)

    def __len__(self):
        return len(self._handlers)

    def subscribe(self, handler):
        """Register ``handler``; returns the token that unsubscribes it."""
        token = next(self._tokens)
        self._handlers[token] = handler
        return token

    def unsubscribe(self, token):
        """Remove the handler registered under ``token``; True if there was one."""
        return self._handlers.pop(token, None) is not None

    def publish(self, event):
        """Call every handler with ``event``; returns how many were called."""
        for handler in list(self._handlers.values()):
            handler(event)
        return len(self._handlers)
'''
_GOOD = _SOURCE.replace('''    def subscribe(self, handler):
        """Register ``handler``; returns the token that unsubscribes it."""
        token = next(self._tokens)
        self._handlers[token] = handler
        return token

    def unsubscribe(self, token):
        """Remove the handler registered under ``token``; True if there was one."""
        return self._handlers.pop(token, None) is not None

    def publish(self, event):
        """Call every handler with ``event``; returns how many were called."""
        for handler in list(self._handlers.values()):
            handler(event)
        return len(self._handlers)
''', '''    def subscribe(self, handler, once=False):
        """Register ``handler`` (``once``: for the next event only); returns its token."""
        token = next(self._tokens)
        self._handlers[token] = (handler, once)
        return token

    def unsubscribe(self, token):
        """Remove the handler registered under ``token``; True if there was one."""
        entry = self._handlers.pop(token, None)
        return entry is not None

    def publish(self, event):
        """Call every handler with ``event``; returns how many were called."""
        called = 0
        for token, (handler, once) in list(self._handlers.items()):
            handler(event)
            called += 1
            if once:
                self.unsubscribe(token)
        return called
''')

# the input draws both the probes (in the sandbox) and the checks (in the grader) run
_DRAW_UNSUBSCRIBED = '''def _draw_unsubscribed(rng):
    tags = [rng.getrandbits(32) for _ in range(rng.randint(2, 6))]
    dropped = sorted(rng.sample(range(len(tags)), rng.randint(1, len(tags) - 1)))
    return tags, dropped, f"e{rng.getrandbits(32):x}"
'''
_DRAW_CHURN = '''def _draw_churn(rng):
    return rng.randint(200, 900), rng.randint(1, 5), f"e{rng.getrandbits(32):x}"
'''

SHAPE = Shape(
    name="subscribers", family="memory_leak", module="@n@_events.py",
    what="@n@ event subscriptions", feature="one-shot subscriptions to @n@ events",
    source=_SOURCE, good=_GOOD,
    bug=(('''        entry = self._handlers.pop(token, None)
        return entry is not None''', '''        entry = self._handlers.get(token)
        return entry is not None'''),
         ('''            if once:
                self.unsubscribe(token)''', '''            if once:
                self._handlers.pop(token, None)''')),
    tests='''from @pkg@.@n@_events import @N@Events


def test_publish_calls_subscribers():
    events, got = @N@Events(), []
    events.subscribe(got.append)
    assert events.publish("e1") == 1 and got == ["e1"]
''',
    feature_tests='''

def test_once_handlers_fire_once():
    events, got = @N@Events(), []
    events.subscribe(got.append, once=True)
    events.publish("a")
    events.publish("b")
    assert got == ["a"]
''',
    probes='''from @pkg@.@n@_events import @N@Events


def probe_publish_reaches_every_subscriber():
    events, got = @N@Events(), []
    events.subscribe(lambda e: got.append(("x", e)))
    events.subscribe(lambda e: got.append(("y", e)))
    return {"called": events.publish(7), "got": got}


def probe_once_handlers_fire_once():
    events, got = @N@Events(), []
    events.subscribe(got.append, once=True)
    events.subscribe(got.append)
    return {"first": events.publish(1), "second": events.publish(2), "got": got}


def probe_tokens_are_distinct():
    events = @N@Events()
    tokens = [events.subscribe(print) for _ in range(5)]
    return len(set(tokens))


''' + _DRAW_UNSUBSCRIBED + '''


def probe_unsubscribed_handlers_are_not_called(rng):
    tags, dropped, event = _draw_unsubscribed(rng)
    events, got = @N@Events(), []
    tokens = [events.subscribe(lambda e, tag=tag: got.append([tag, e])) for tag in tags]
    removed = [events.unsubscribe(tokens[i]) for i in dropped]
    return {"removed": removed, "called": events.publish(event), "got": got,
            "again": events.unsubscribe(tokens[dropped[0]])}


''' + _DRAW_CHURN + '''


def probe_churn_leaves_no_handlers_behind(rng):
    cycles, kept, event = _draw_churn(rng)
    events, got = @N@Events(), []
    for _ in range(kept):
        events.subscribe(got.append)
    for _ in range(cycles):
        events.unsubscribe(events.subscribe(len))
    return {"cycles": cycles, "left": len(events), "called": events.publish(event), "got": got}
''',
    checks='''def test_publish_reaches_every_subscriber(seen):
    assert seen.value == {"called": 2, "got": [["x", 7], ["y", 7]]}


def test_once_handlers_fire_once(seen):
    assert seen.value == {"first": 2, "second": 1, "got": [1, 1, 2]}


def test_tokens_are_distinct(seen):
    assert seen.value == 5


''' + _DRAW_UNSUBSCRIBED + '''


def test_unsubscribed_handlers_are_not_called(seen, rng):
    tags, dropped, event = _draw_unsubscribed(rng)
    kept = [[tag, event] for i, tag in enumerate(tags) if i not in dropped]
    assert seen.value == {"removed": [True] * len(dropped), "called": len(kept), "got": kept, "again": False}


''' + _DRAW_CHURN + '''


def test_churn_leaves_no_handlers_behind(seen, rng):
    cycles, kept, event = _draw_churn(rng)
    assert seen.value == {"cycles": cycles, "left": kept, "called": kept, "got": [event] * kept}
''')
SPLIT = "heldout"

"""shared_dependency, train: the vendored text helpers; @n@ handles arrive with a rewrite of
``slugify`` that replaces each odd character on its own, so runs of them leave double dashes."""

from ..shapes import Shape

_SOURCE = '''"""Text helpers vendored from the shared platform library (used by every service)."""

import re
import unicodedata


def slugify(text):
    """``text`` as a URL slug: ASCII, lower case, words joined by single dashes."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
'''
_GOOD = '''"""Text helpers vendored from the shared platform library (used by every service)."""

import re
import unicodedata

_SEPARATORS = re.compile(r"[^a-z0-9]+")


def slugify(text, max_length=None):
    """``text`` as a URL slug: ASCII, lower case, words joined by single dashes, cut at a
    dash to at most ``max_length`` characters."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = _SEPARATORS.sub("-", ascii_text.lower()).strip("-")
    if max_length is not None and len(slug) > max_length:
        slug = slug[:max_length + 1].rsplit("-", 1)[0] if "-" in slug[:max_length + 1] else slug[:max_length]
    return slug


def @n@_handle(name, number):
    """The public handle of a @n@: its slug (at most 40 characters) and its number."""
    return f"{slugify(name, max_length=40)}-{number}"
'''

SHAPE = Shape(
    name="slugs", family="shared_dependency", module="common/text.py",
    what="the vendored text helpers", feature="@n@ handles in the shared text helpers",
    source=_SOURCE, good=_GOOD,
    bug=(('''_SEPARATORS = re.compile(r"[^a-z0-9]+")''', '''_SEPARATORS = re.compile(r"[^a-z0-9]")'''),),
    tests='''from common.text import slugify


def test_simple_words():
    assert slugify("Hello World") == "hello-world"
''',
    feature_tests='''

def test_handles_end_with_the_number():
    from common.text import @n@_handle
    assert @n@_handle("Blue", 7) == "blue-7"
''',
    probes='''from common.text import @n@_handle, slugify

WORDS = ["alpha", "Beta", "GAMMA", "delta", "crème", "Zoë", "north", "x9", "2024"]


def _title(rng, separators):
    words = rng.sample(WORDS, rng.randint(2, 5))
    return "".join(w + rng.choice(separators) for w in words[:-1]) + words[-1], words


def probe_single_separators(rng):
    title, _ = _title(rng, [" ", "-", "_", "/", "."])
    return slugify(title)


def probe_accents_are_dropped(rng):
    return [slugify(w) for w in rng.sample(["Crème", "Zoë", "Ångström", "naïve"], 2)]


def probe_handles_of_one_word_names(rng):
    word, number = rng.choice(WORDS), rng.randint(1, 10 ** 6)
    return @n@_handle(word, number)


def probe_long_names_are_cut_at_a_word(rng):
    words = [rng.choice(["lorem", "ipsum", "dolor", "amet"]) for _ in range(rng.randint(10, 20))]
    return @n@_handle(" ".join(words), 1)


def probe_runs_of_separators_collapse(rng):
    title, _ = _title(rng, ["  ", " - ", ", ", " & ", "...", " / "])
    return [slugify(f"  {title}!! "), @n@_handle(title, 3)]
''',
    checks='''import unicodedata

WORDS = ["alpha", "Beta", "GAMMA", "delta", "crème", "Zoë", "north", "x9", "2024"]


def _plain(word):
    return unicodedata.normalize("NFKD", word).encode("ascii", "ignore").decode().lower()


def _slug_of(rng, separators):
    words = rng.sample(WORDS, rng.randint(2, 5))
    for _ in words[:-1]:
        rng.choice(separators)
    return "-".join(_plain(w) for w in words)


def test_single_separators(seen, rng):
    assert seen.value == _slug_of(rng, [" ", "-", "_", "/", "."])


def test_accents_are_dropped(seen, rng):
    assert seen.value == [_plain(w) for w in rng.sample(["Crème", "Zoë", "Ångström", "naïve"], 2)]


def test_handles_of_one_word_names(seen, rng):
    word, number = rng.choice(WORDS), rng.randint(1, 10 ** 6)
    assert seen.value == f"{_plain(word)}-{number}"


def test_long_names_are_cut_at_a_word(seen, rng):
    words = [rng.choice(["lorem", "ipsum", "dolor", "amet"]) for _ in range(rng.randint(10, 20))]
    slug = "-".join(words)
    cut = slug[:41].rsplit("-", 1)[0]
    assert seen.value == f"{cut}-1"


def test_runs_of_separators_collapse(seen, rng):
    slug = _slug_of(rng, ["  ", " - ", ", ", " & ", "...", " / "])
    assert seen.value == [slug, f"{slug[:41].rsplit('-', 1)[0] if len(slug) > 40 else slug}-3"]
''')
SPLIT = "train"

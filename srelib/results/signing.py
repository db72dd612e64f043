"""Signed runs: a run directory's ``run.json`` and ``episodes.jsonl`` under one signature.

Anyone can recompute an unkeyed digest, so a plan digest proves nothing against a forger; a
signature made with a key the forger lacks does. :func:`sign_run` writes ``run.sig``: the
SHA-256 of both files' bytes, signed with HMAC-SHA256 (a secret key file: any bytes, at least 16)
or Ed25519 (a PEM private key, through ``cryptography``). :func:`signature_findings` checks it
with the same secret, or with the Ed25519 private or public key. Any byte of either file
changed after signing, a resume included, breaks the signature.

Make a key with ``head -c 32 /dev/urandom > run.key`` (HMAC) or
``openssl genpkey -algorithm ed25519 -out run.pem`` (Ed25519; share
``openssl pkey -in run.pem -pubout`` with those who verify).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from srelib.extras import require

SIGNATURE_FILE = "run.sig"
_SIGNED = ("run.json", "episodes.jsonl")
_MIN_SECRET = 16


@dataclass(frozen=True)
class RunKey:
    """A signing or checking key: ``scheme`` ``"hmac-sha256"`` (``secret``) or ``"ed25519"``
    (``private``, which can sign, or only ``public``)."""

    scheme: str
    secret: bytes | None = None
    private: Any = None
    public: Any = None

    def mac(self, message: bytes) -> bytes:
        """HMAC-SHA256 of ``message`` under the secret (an HMAC key only)."""
        if self.secret is None:
            raise ValueError(f"a {self.scheme} key has no HMAC secret")
        return hmac.new(self.secret, message, hashlib.sha256).digest()

    @property
    def key_id(self) -> str:
        """A short public name of the key (never the secret): which key signed a run."""
        if self.scheme == "hmac-sha256":
            return self.mac(b"srelib run key id").hex()[:16]
        require("cryptography", "Ed25519 run signatures")
        from cryptography.hazmat.primitives import serialization

        raw = self.public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return hashlib.sha256(raw).hexdigest()[:16]


def load_key(path: str | os.PathLike) -> RunKey:
    """The key in ``path``: a PEM Ed25519 key (private or public) or an HMAC secret.

    Args:
        path: a key file.

    Returns:
        The :class:`RunKey`.

    Raises:
        ValueError: the file is missing, a secret is shorter than 16 bytes, or a PEM key is not
            Ed25519. ``MissingExtra`` when a PEM key needs ``cryptography`` and it is absent.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"key file {path} does not exist")
    data = path.read_bytes()
    if data.lstrip().startswith(b"-----BEGIN"):
        return _pem_key(path, data)
    if len(data) < _MIN_SECRET:
        raise ValueError(f"key file {path} holds {len(data)} bytes; an HMAC secret needs at least "
                         f"{_MIN_SECRET} (make one with: head -c 32 /dev/urandom > {path.name})")
    return RunKey("hmac-sha256", secret=data)


def _pem_key(path: Path, data: bytes) -> RunKey:
    require("cryptography", "Ed25519 run signatures")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    try:
        if b"PRIVATE KEY" in data:
            private = serialization.load_pem_private_key(data, password=None)
            key = RunKey("ed25519", private=private, public=private.public_key())
        else:
            key = RunKey("ed25519", public=serialization.load_pem_public_key(data))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"key file {path} is not a readable unencrypted PEM key: {exc}") from exc
    if not isinstance(key.public, ed25519.Ed25519PublicKey):
        raise ValueError(f"key file {path} holds a {type(key.public).__name__}; run signatures "
                         "take Ed25519 keys (openssl genpkey -algorithm ed25519)")
    return key


def _message(run: Path, scheme: str) -> bytes:
    """What is signed: the scheme and each signed file's SHA-256 (an absent file: None)."""
    digests = {name: hashlib.sha256((run / name).read_bytes()).hexdigest()
               if (run / name).is_file() else None for name in _SIGNED}
    return json.dumps({"scheme": scheme, "files": digests}, sort_keys=True).encode()


def sign_run(run: str | os.PathLike, key_file: str | os.PathLike) -> Path:
    """Sign the run directory ``run`` with the key in ``key_file``; returns ``run.sig``'s path.

    Args:
        run: a run directory (``run.json`` and ``episodes.jsonl``).
        key_file: an HMAC secret or an Ed25519 private key (:func:`load_key`).

    Returns:
        The path of the signature file written.

    Raises:
        ValueError: ``run`` has no ``run.json``, or the key is a public key (it cannot sign).
    """
    run, key = Path(run), load_key(key_file)
    if not (run / "run.json").is_file():
        raise ValueError(f"{run} has no run.json to sign")
    message = _message(run, key.scheme)
    if key.scheme == "hmac-sha256":
        signature = key.mac(message).hex()
    elif key.private is None:
        raise ValueError(f"{key_file} is an Ed25519 public key: signing needs the private key")
    else:
        signature = key.private.sign(message).hex()
    path = run / SIGNATURE_FILE
    path.write_text(json.dumps({"scheme": key.scheme, "key_id": key.key_id,
                                "signature": signature}, indent=2) + "\n")
    return path


def _valid(key: RunKey, message: bytes, signature: str) -> bool:
    try:
        raw = bytes.fromhex(signature)
    except (TypeError, ValueError):
        return False
    if key.scheme == "hmac-sha256":
        return hmac.compare_digest(key.mac(message), raw)
    require("cryptography", "Ed25519 run signatures")
    from cryptography.exceptions import InvalidSignature

    try:
        key.public.verify(raw, message)
    except InvalidSignature:
        return False
    return True


def signature_findings(run: str | os.PathLike,
                       key_file: str | os.PathLike | None) -> tuple[list[str], list[str]]:
    """``(problems, claims)`` of the run's signature checked with ``key_file``.

    With a key: a missing, unreadable, other-scheme or wrong signature is a problem. Without
    one: a signature present is a claim (it was not checked); no signature, nothing.

    Args:
        run: the run directory.
        key_file: the key to check with, or None.

    Returns:
        Two lists of sentences.
    """
    run = Path(run)
    path = run / SIGNATURE_FILE
    try:
        stored = json.loads(path.read_text()) if path.is_file() else None
    except (ValueError, UnicodeDecodeError):
        stored = {}
    if key_file is None:
        return [], [] if stored is None else [
            f"{SIGNATURE_FILE} says the run is signed; no key was given, so it was not checked"]
    key = load_key(key_file)
    if stored is None:
        return [f"the run is not signed ({SIGNATURE_FILE} is missing); a key was given"], []
    if not isinstance(stored, dict) or stored.get("scheme") != key.scheme:
        scheme = stored.get("scheme") if isinstance(stored, dict) else None
        return [f"{SIGNATURE_FILE} holds a {scheme!r} signature; the key given is {key.scheme}"], []
    if not _valid(key, _message(run, key.scheme), str(stored.get("signature"))):
        return [f"the signature in {SIGNATURE_FILE} does not match run.json and episodes.jsonl "
                f"under the key given ({key.key_id}): the run was changed after signing, or "
                "signed with another key"], []
    return [], []

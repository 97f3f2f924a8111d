"""Keeping credentials out of everything memplug writes or prints.

A benchmark run's files are made to be shared (run.json, samples.jsonl, the HTML
report), so nothing secret may reach them: not a password in ``--api-base``
(``http://user:pass@host/v1``), not a key in its query string (``?api-key=...``), not
an ``Authorization: Bearer ...`` header quoted in an error, not the value of any
key-like environment variable, however short (a short one where a secret stands: a
placeholder key "x" must not turn the model "openai/x" into "openai/***"). :func:`redact_url` is applied to URLs
before they are stored; :func:`scrub` to every free text (error messages, log lines).
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"
#: environment variables whose values are secrets (OPENAI_API_KEY, HF_TOKEN, PGPASSWORD ...)
_SECRET_VAR = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?)$|_(KEY|TOKEN|SECRET)_", re.I)
#: query parameters that carry credentials (Azure's api-key, Gemini's key, signed URLs ...)
_SECRET_PARAM = re.compile(r"key|token|secret|password|passwd|sig|signature|auth|credential", re.I)
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/@\s:]*):(?P<password>[^/@\s]+)@")
_QUERY_PAIR = re.compile(
    r"(?P<name>[?&;][A-Za-z0-9_.-]*(?:key|token|secret|password|passwd|sig|signature|auth)"
    r"[A-Za-z0-9_.-]*=)(?P<value>[^&#\s\"']+)",
    re.I,
)
_BEARER = re.compile(r"(?P<head>\b(?:Bearer|Basic|Token)\s+)(?P<value>[A-Za-z0-9._~+/=-]{3,})", re.I)
_KEY_FIELD = re.compile(
    r"(?P<head>\b(?:api[_-]?key|x-api-key|authorization)[\"']?\s*[:=]\s*[\"']?)"
    r"(?!(?:Bearer|Basic|Token)\s)(?P<value>[^\s\"',}]{3,})",
    re.I,
)
#: where a secret stands in a text: after an auth scheme, a credential field's name or
#: "key provided:" (OpenAI's "Incorrect API key provided: ..."); what a short secret needs before it
_STANDS = (
    r"(?:\b(?:Bearer|Basic|Token)\s+|\b(?:api[_-]?key|x-api-key|authorization|key|token|secret|password"
    r"|passwd|provided)[\"']?\s*[:=]\s*[\"']?|://[^/@\s:]*:)"
)


def redact_url(url: str | None) -> str | None:
    """``url`` with its password and credential-like query values replaced by ``***``."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return scrub(url)
    netloc = parts.netloc
    if parts.password is not None:
        host = netloc.rpartition("@")[2]
        netloc = f"{parts.username}:{MASK}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, MASK if _SECRET_PARAM.search(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def is_redacted(url: str | None) -> bool:
    """Whether ``url`` lost a credential to :func:`redact_url` (it cannot be used as is)."""
    return bool(url) and MASK in str(url)


def environment_secrets(environ: "os._Environ[str] | dict[str, str] | None" = None) -> set[str]:
    """Values of key-like environment variables, whatever their length."""
    env = os.environ if environ is None else environ
    return {v for k, v in env.items() if v and _SECRET_VAR.search(k)}


def _url_secrets(urls: Iterable[str | None]) -> set[str]:
    found: set[str] = set()
    for url in urls:
        if not url:
            continue
        try:
            parts = urlsplit(url)
        except ValueError:
            continue
        if parts.password:
            found.add(parts.password)
        found.update(v for k, v in parse_qsl(parts.query) if v and _SECRET_PARAM.search(k))
    return found


def scrub(text: str, secrets: Iterable[str | None] = (), urls: Iterable[str | None] = ()) -> str:
    """``text`` with every known secret masked.

    Known secrets are ``secrets`` (e.g. an API key given in code), the password and
    credential parameters of ``urls``, and the values of key-like environment variables.
    Patterns catch the rest: passwords in any URL, credential query parameters,
    ``Bearer`` tokens and ``api_key: ...`` fields. A known secret of 8 characters or more
    is masked wherever it appears; a shorter one only where a secret stands (after
    ``Bearer``, ``api_key=``, ``key provided:``, in a URL's password), as a whole word, so
    that a placeholder key such as "x" mangles neither a word holding an x nor the model
    "openai/x" it happens to name.
    """
    if not text:
        return text
    return _scrub(text, _known(secrets, urls))


def _known(secrets: Iterable[str | None] = (), urls: Iterable[str | None] = ()) -> list[str]:
    """The known secrets, longest first (one may contain another)."""
    known = {s for s in (*secrets, *_url_secrets(urls), *environment_secrets()) if s and s != MASK}
    return sorted(known, key=len, reverse=True)


def _scrub(text: str, known: list[str]) -> str:
    # the known secrets first: the patterns below may take a short one's place for another word's
    for secret in known:
        if len(secret) >= 8:
            text = text.replace(secret, MASK)
        elif secret in text:
            text = re.sub(
                rf"(?P<head>{_STANDS}){re.escape(secret)}(?![A-Za-z0-9])", rf"\g<head>{MASK}", text, flags=re.I
            )
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:{MASK}@", text)
    text = _QUERY_PAIR.sub(lambda m: f"{m['name']}{MASK}", text)
    text = _BEARER.sub(lambda m: f"{m['head']}{MASK}", text)
    text = _KEY_FIELD.sub(lambda m: f"{m['head']}{MASK}", text)
    return text


def scrub_all(value: Any) -> Any:
    """``value`` with every string in it scrubbed (:func:`scrub`), through dicts and lists:
    run.json's spec and resolved values, written to be shared. The environment is read
    once for all of them, not once per string (that was 4 ms of each run.json written)."""
    return _scrub_all(value, _known())


def _scrub_all(value: Any, known: list[str]) -> Any:
    if isinstance(value, str):
        return _scrub(value, known) if value else value
    if isinstance(value, dict):
        return {k: _scrub_all(v, known) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_all(v, known) for v in value]
    return value

"""Any memory system that ships an MCP server, through the official ``mcp`` SDK.

``-o command="..."`` starts a stdio server (``mcp.client.stdio``); ``-o url=...`` reaches a
streamable-HTTP one (``mcp.client.streamable_http``). The agent lists the server's tools
and picks one to write with and one to search with: ``-o add=TOOL`` / ``-o search=TOOL``,
or else the first of the common names (:data:`ADD_NAMES`, :data:`SEARCH_NAMES`). The
arguments come from each tool's input schema: the text (``text``, ``content``,
``memory``... else the first required string), the query (``query``, ``q``...), a result
limit (``limit``, ``top_k``...) set to the run's top K, and a user or namespace argument
(``user_id``, ``namespace``, ``session_id``...) set to one value per sample. A server whose
tools want something else is driven with a JSON template of the arguments
(``-o add_args`` / ``-o search_args``, with ``{text}``, ``{query}``, ``{user}``, ``{k}``,
``{id}`` filled in).

Isolation (``-o isolation``): ``user`` shares one server among the run's samples and
gives each sample its own user id; ``server`` starts one stdio server per sample (the only
choice when the tools take no user argument, or when the command names the sample's
``{workdir}``); ``none`` lets samples share one memory. ``auto`` (default) takes ``user``
where the tools allow it, else ``server`` for a command, and refuses a URL whose tools
cannot keep samples apart.

Each message is written with one call (``-o unit=chunk``: one call per chunk). The agent
keeps the texts it wrote with their message ids, so a recalled item that holds a stored
text (most servers return what was stored) carries its message ids and recall@K is
scored. Search results are read from the tool's text content (JSON lists, objects with a
list of results, or plain text one memory per line) or its structured content.

The SDK's sessions live in an event loop of their own, on a thread per server: the
runner's async calls and plain sync calls reach it alike.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, cast

import attrs

from memplug.adapters.external import OFFLINE_ENV, chunk_text, message_text
from memplug.errors import MemplugError
from memplug.models import AgentQuestion, Chunk, Recall, Recalled
from memplug.options import Option, resolve
from memplug.preflight import AgentPlan
from memplug.protocols import AgentConfig

if sys.version_info < (3, 11):  # no built-in groups: anyio raises the backport's (its dependency there)
    from exceptiongroup import BaseExceptionGroup

if TYPE_CHECKING:
    from memplug.llm import LLM

#: tool names tried, in this order, when ``-o add`` is not given
ADD_NAMES = (
    "add_memory",
    "store_memory",
    "save_memory",
    "create_memory",
    "memory_store",
    "remember",
    "add",
    "store",
    "memorize",
    "add_memories",
    "memory_add",
    "write_memory",
)
#: tool names tried, in this order, when ``-o search`` is not given
SEARCH_NAMES = (
    "search_memory",
    "search_memories",
    "search",
    "recall",
    "query",
    "retrieve_memory",
    "retrieve_memories",
    "query_memory",
    "memory_search",
    "find_memories",
    "retrieve",
)
#: argument names that take the text to store
TEXT_ARGS = ("text", "content", "memory", "message", "data", "fact", "note", "information", "input", "value")
#: argument names that take the query
QUERY_ARGS = ("query", "q", "search_query", "text", "search", "keywords", "question", "prompt", "input")
#: integer argument names that limit the number of results
LIMIT_ARGS = (
    "limit",
    "top_k",
    "topK",
    "k",
    "n",
    "max_results",
    "maxResults",
    "num_results",
    "numResults",
    "top_n",
    "count",
    "size",
)
#: argument names that keep one user's (sample's) memories apart
USER_ARGS = (
    "user_id",
    "userId",
    "user",
    "namespace",
    "session_id",
    "sessionId",
    "agent_id",
    "agentId",
    "run_id",
    "tenant_id",
    "tenant",
    "collection",
    "collection_name",
    "project",
    "scope",
    "container_tag",
    "containerTag",
    "memory_bank",
    "bank",
)
#: keys of a JSON object whose list holds the results
LIST_KEYS = (
    "results",
    "memories",
    "items",
    "hits",
    "matches",
    "documents",
    "entities",
    "nodes",
    "notes",
    "data",
    "result",
    "records",
    "chunks",
)
#: keys of a result object that hold its text
TEXT_KEYS = (
    "memory",
    "text",
    "content",
    "document",
    "page_content",
    "value",
    "fact",
    "observation",
    "body",
    "snippet",
    "summary",
    "data",
)
SCORE_KEYS = ("score", "similarity", "relevance", "relevance_score", "rank_score")
#: seconds a shared server stays up once no sample holds it (the run's next samples reuse it)
LINGER_S = 30.0
NUMBERED = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+")


def _string_type(spec: Any) -> bool:
    if not isinstance(spec, dict):
        return False
    kind = spec.get("type")
    if kind == "string" or (isinstance(kind, list) and "string" in kind):
        return True
    return any(_string_type(s) for s in spec.get("anyOf") or spec.get("oneOf") or ())


def _number_type(spec: Any) -> bool:
    if not isinstance(spec, dict):
        return False
    kind = spec.get("type")
    kinds = set(kind) if isinstance(kind, list) else {kind}
    return bool(kinds & {"integer", "number"}) or any(_number_type(s) for s in spec.get("anyOf") or ())


def _object_type(spec: Any) -> bool:
    return isinstance(spec, dict) and (
        spec.get("type") == "object"
        or any(isinstance(s, dict) and s.get("type") == "object" for s in spec.get("anyOf") or ())
    )


@attrs.frozen
class ToolUse:
    """How one tool is called: which argument takes the text (or query), the user id, the limit."""

    name: str
    text_arg: str | None = None
    user_arg: str | None = None
    limit_arg: str | None = None
    metadata_arg: str | None = None
    #: a JSON template of the arguments (-o add_args / search_args); placeholders filled per call
    template: Any = None

    def arguments(self, text: str, user: str, k: int, ids: Iterable[str] = ()) -> dict[str, Any]:
        ids = list(ids)
        if self.template is not None:
            return cast(
                "dict[str, Any]",
                _fill(
                    self.template,
                    {
                        "text": text,
                        "query": text,
                        "user": user,
                        "k": k,
                        "id": ids[0] if ids else "",
                        "ids": ",".join(ids),
                    },
                ),
            )
        args: dict[str, Any] = {}
        if self.text_arg:
            args[self.text_arg] = text
        if self.user_arg:
            args[self.user_arg] = user
        if self.limit_arg:
            args[self.limit_arg] = k
        if self.metadata_arg and ids:
            args[self.metadata_arg] = {"message_ids": ids}
        return args

    def describe(self, kind: str) -> str:
        if self.template is not None:
            return f"{self.name}({kind}_args template)"
        names = [a for a in (self.text_arg, self.user_arg, self.limit_arg, self.metadata_arg) if a]
        return f"{self.name}({', '.join(names)})"


def _fill(template: Any, values: Mapping[str, Any]) -> Any:
    """The template with ``{name}`` placeholders filled; a string that is only ``{k}`` becomes the number."""
    if isinstance(template, str):
        if template == "{k}":
            return values["k"]
        for key, value in values.items():
            template = template.replace("{" + key + "}", str(value))
        return template
    if isinstance(template, list):
        return [_fill(v, values) for v in template]
    if isinstance(template, dict):
        return {k: _fill(v, values) for k, v in template.items()}
    return template


def _find_tool(
    tools: Mapping[str, dict[str, Any]], asked: str, names: tuple[str, ...], kind: str, option: str, where: str
) -> dict[str, Any]:
    listed = ", ".join(tools) or "none"
    if asked:
        if asked not in tools:
            raise MemplugError(
                f"agent 'mcp': the server at {where} has no tool {asked!r} (-o {option}); its tools: {listed}"
            )
        return tools[asked]
    lower = {name.lower(): tool for name, tool in tools.items()}
    for name in names:
        if name in lower:
            return lower[name]
    raise MemplugError(
        f"agent 'mcp': the server at {where} has no tool to {kind} with (looked for "
        f"{', '.join(names[:6])}...); its tools: {listed}; name one with -o {option}=TOOL"
    )


def _use(tool: dict[str, Any], kind: str, values: Mapping[str, Any]) -> ToolUse:
    """How to call ``tool`` to write (kind "add") or to search (kind "search"), read from its input schema."""
    name = tool["name"]
    raw_template = values[f"{kind}_args"]
    schema = tool.get("inputSchema") or {}
    props: dict[str, Any] = schema.get("properties") or {}
    required = list(schema.get("required") or ())
    user_wanted = values["user_arg"]
    if user_wanted == "none":
        user_arg = None
    elif user_wanted:
        user_arg = user_wanted if user_wanted in props else None
    else:
        user_arg = next((a for a in USER_ARGS if a in props and _string_type(props[a])), None)
    if raw_template:
        try:
            template = json.loads(raw_template)
        except json.JSONDecodeError as exc:
            raise MemplugError(f"agent 'mcp': -o {kind}_args is not JSON ({exc.msg} at character {exc.pos})") from None
        if not isinstance(template, dict):
            raise MemplugError(f"agent 'mcp': -o {kind}_args must be a JSON object of the tool's arguments")
        return ToolUse(name, user_arg="{user}" if "{user}" in raw_template else None, template=template)
    strings = [a for a, s in props.items() if _string_type(s) and a != user_arg]
    preferred = TEXT_ARGS if kind == "add" else QUERY_ARGS
    text_arg = (
        next((a for a in preferred if a in strings), None)
        or next((a for a in required if a in strings), None)
        or (strings[0] if strings else None)
    )
    if text_arg is None:
        raise MemplugError(
            f"agent 'mcp': tool {name!r} takes no string argument for the "
            f"{'text' if kind == 'add' else 'query'} (its arguments: {', '.join(props) or 'none'}); "
            f"give -o {kind}_args='{{...}}' with {{{'text' if kind == 'add' else 'query'}}}"
        )
    limit_arg = None
    if kind == "search":
        limit_arg = next((a for a in LIMIT_ARGS if a in props and _number_type(props[a])), None)
    metadata_arg = "metadata" if kind == "add" and _object_type(props.get("metadata")) else None
    filled = {text_arg, user_arg, limit_arg, metadata_arg}
    unfilled = [a for a in required if a not in filled]
    if unfilled:
        raise MemplugError(
            f"agent 'mcp': tool {name!r} requires {', '.join(unfilled)}, which memplug cannot "
            f"fill; give the arguments as -o {kind}_args='{{...}}' (placeholders {{text}}, {{query}}, "
            "{user}, {k}, {id})"
        )
    return ToolUse(name, text_arg, user_arg, limit_arg, metadata_arg)


@attrs.frozen
class Plan:
    add: ToolUse
    search: ToolUse
    #: "user" (one server, a user id per sample), "server" (one stdio server per sample) or "none"
    isolation: str

    def note(self, where: str) -> str:
        how = {
            "user": "one server for the run, a user id per sample",
            "server": "one server per sample",
            "none": "samples share one memory (-o isolation=none)",
        }[self.isolation]
        return (
            f"mcp server {where}: writes with {self.add.describe('add')}, searches with "
            f"{self.search.describe('search')}; {how}"
        )


def make_plan(tools: Iterable[dict[str, Any]], values: Mapping[str, Any]) -> Plan:
    """The tools to call and how samples are kept apart, or one line saying why the server cannot serve."""
    by_name = {t["name"]: t for t in tools}
    where = _where(values)
    add = _use(_find_tool(by_name, values["add"], ADD_NAMES, "write memories", "add", where), "add", values)
    search = _use(
        _find_tool(by_name, values["search"], SEARCH_NAMES, "search memories", "search", where), "search", values
    )
    per_user = bool(add.user_arg and search.user_arg)
    isolation = values["isolation"]
    workdir_named = any("{workdir}" in str(values.get(k) or "") for k in ("command", "env", "cwd"))
    if isolation == "auto":
        if per_user and (values["url"] or not workdir_named):
            isolation = "user"
        elif values["command"]:
            isolation = "server"
        else:
            raise MemplugError(
                f"agent 'mcp': the tools of {where} ({add.name}, {search.name}) take no user or namespace argument, "
                "so every sample would write into one memory; start one server per sample with -o command=..., "
                "name the argument with -o user_arg=NAME, or accept a shared memory with -o isolation=none"
            )
    elif isolation == "user" and not per_user:
        raise MemplugError(
            f"agent 'mcp': -o isolation=user needs a user or namespace argument on both "
            f"{add.name} and {search.name}; they take none (name it with -o user_arg=NAME)"
        )
    elif isolation == "server" and not values["command"]:
        raise MemplugError("agent 'mcp': -o isolation=server starts one server per sample, which needs -o command=...")
    return Plan(add, search, isolation)


def _where(values: Mapping[str, Any]) -> str:
    return values["url"] or repr(values["command"])


# -- results -----------------------------------------------------------------


def result_items(result: Mapping[str, Any]) -> list[tuple[str, float | None, tuple[str, ...]]]:
    """(text, score, message ids found in the result) for each memory a search result holds.

    A plain-text result gives one item per line; :func:`plain_lines` tells which those were."""
    values: list[Any] = []
    for block in result.get("content") or ():
        if block.get("type") != "text":
            continue
        text = block.get("text") or ""
        try:
            values.append(json.loads(text))
        except (json.JSONDecodeError, ValueError):
            values.append(text)
    if not values and result.get("structuredContent") is not None:
        values.append(result["structuredContent"])
    items: list[tuple[str, float | None, tuple[str, ...]]] = []
    for value in values:
        for element in _elements(value):
            item = _item(element)
            if item is not None:
                items.append(item)
    return items


def _elements(value: Any) -> list[Any]:
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except (json.JSONDecodeError, ValueError):
            return [_Line(NUMBERED.sub("", line).strip()) for line in value.splitlines() if line.strip()]
        return _elements(parsed) if not isinstance(parsed, str) else [parsed]
    if isinstance(value, list):
        return [e for v in value for e in (_elements(v) if isinstance(v, list) else [v])]
    if isinstance(value, dict):
        if set(value) == {"result"}:  # the SDK wraps a plain return value as {"result": ...}
            return _elements(value["result"])
        for key in LIST_KEYS:
            if isinstance(value.get(key), list):
                return _elements(value[key])
        return [value]
    return [] if value is None else [value]


class _Line(str):
    """A line of a plain-text result (a memory, or a header, hash or date line around one)."""


def _item(element: Any) -> tuple[str, float | None, tuple[str, ...]] | None:
    if isinstance(element, str):
        return (element, None, ()) if element.strip() else None
    if not isinstance(element, dict):
        return (json.dumps(element), None, ())
    text = next((element[k] for k in TEXT_KEYS if isinstance(element.get(k), str) and element[k].strip()), None)
    if text is None and isinstance(element.get("observations"), list):  # knowledge-graph entities
        text = "\n".join(str(o) for o in element["observations"])
    if text is None:
        text = json.dumps(element, ensure_ascii=False)
    score = next(
        (
            float(element[k])
            for k in SCORE_KEYS
            if isinstance(element.get(k), (int, float)) and not isinstance(element.get(k), bool)
        ),
        None,
    )
    meta = element.get("metadata")
    ids = (
        tuple(str(i) for i in meta.get("message_ids") or ())
        if isinstance(meta, dict) and isinstance(meta.get("message_ids"), list)
        else ()
    )
    return text, score, ids


# -- connections -------------------------------------------------------------


def _root(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (anyio's task groups wrap the transport's errors)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _dump(model: Any) -> dict[str, Any]:
    """An SDK model as its wire JSON (camelCase keys in mcp 1.x and 2.x alike)."""
    dumped: dict[str, Any] = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped


@attrs.frozen
class Target:
    """What to connect to: a stdio command (argv, environment, cwd) or a streamable-HTTP URL."""

    argv: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None

    @classmethod
    def of(cls, values: Mapping[str, Any], workdir: Path) -> "Target":
        if values["url"]:
            return cls(url=values["url"])
        subst = lambda s: s.replace("{workdir}", str(workdir))
        try:
            argv = tuple(subst(a) for a in shlex.split(values["command"]))
            env = tuple((k, subst(v)) for k, _, v in (p.partition("=") for p in shlex.split(values["env"] or "")))
        except ValueError as exc:
            raise MemplugError(f"agent 'mcp': -o command or -o env cannot be split into words ({exc})") from None
        if not argv:
            raise MemplugError("agent 'mcp': -o command is empty")
        return cls(argv=argv, env=env, cwd=subst(values["cwd"]) if values["cwd"] else None)

    def check(self) -> None:
        """A stdio command that is not on PATH (or not a file) fails here, in one line."""
        if self.url:
            if not re.match(r"^https?://", self.url):
                raise MemplugError(f"agent 'mcp': -o url={self.url!r} is not an http(s) URL")
            return
        exe = self.argv[0]
        if shutil.which(exe, path=dict(self.env).get("PATH") or os.environ.get("PATH")) is None:
            raise MemplugError(
                f"agent 'mcp': the server command {exe!r} was not found (-o command="
                f"{shlex.join(self.argv)!r}); install it or give its full path"
            )
        if self.cwd and not Path(self.cwd).is_dir():
            raise MemplugError(f"agent 'mcp': -o cwd={self.cwd!r} is not a folder")


class Connection:
    """One MCP client session on an event loop of its own thread: started, called, closed from any thread."""

    def __init__(self, target: Target, timeout: float, log: Path | None = None) -> None:
        self.target = target
        self.timeout = timeout
        self.log_path = log
        self.session: Any = None
        self.tools: list[dict[str, Any]] = []
        self._stop: asyncio.Event | None = None
        self._owner: asyncio.Task[None] | None = None
        self._log: Any = None
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="memplug-mcp", daemon=True)
        self._thread.start()
        try:
            self.tools = asyncio.run_coroutine_threadsafe(self._start(), self.loop).result()
        except BaseException as exc:
            self.close()
            raise MemplugError(self._failure(_root(exc))) from None

    def _failure(self, exc: BaseException) -> str:
        where = self.target.url or shlex.join(self.target.argv)
        said = ""
        if self.log_path is not None:
            with contextlib.suppress(OSError):
                lines = [
                    ln.strip() for ln in Path(self.log_path).read_text(errors="replace").splitlines() if ln.strip()
                ]
                if lines:
                    said = f"; it said: {lines[-1][:300]}"
        if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
            reason = f"no answer within {self.timeout:g}s"
        else:
            reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        if self.target.url:
            return f"agent 'mcp': the MCP server {where} could not be reached ({reason}){said}"
        return f"agent 'mcp': the MCP server {where} did not start ({reason}){said}"

    async def _start(self) -> list[dict[str, Any]]:
        ready: asyncio.Future[list[dict[str, Any]]] = self.loop.create_future()
        self._stop = asyncio.Event()
        self._owner = self.loop.create_task(self._own(ready))
        try:
            return await asyncio.wait_for(asyncio.shield(ready), self.timeout)
        except BaseException:
            self._stop.set()
            self._owner.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._owner, 10)
            raise

    def _transport(self) -> Any:
        if self.target.url:
            from mcp.client import streamable_http

            # mcp 2.x names it streamable_http_client, 1.x streamablehttp_client
            connect = getattr(streamable_http, "streamable_http_client", None) or getattr(
                streamable_http, "streamablehttp_client"
            )
            return connect(self.target.url)
        from mcp.client.stdio import StdioServerParameters, stdio_client

        env = {**os.environ, **OFFLINE_ENV, **dict(self.target.env)}
        params = StdioServerParameters(
            command=self.target.argv[0], args=list(self.target.argv[1:]), env=env, cwd=self.target.cwd
        )
        if self.log_path is not None:
            self._log = open(self.log_path, "a", encoding="utf-8")  # the server's stderr
            return stdio_client(params, errlog=self._log)
        return stdio_client(params)

    async def _own(self, ready: asyncio.Future[list[dict[str, Any]]]) -> None:
        """Enters and leaves the transport and the session in one task, as anyio requires."""
        from mcp import ClientSession

        assert self._stop is not None
        try:
            async with contextlib.AsyncExitStack() as stack:
                streams = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
                await session.initialize()
                tools: list[dict[str, Any]] = []
                cursor = None
                while True:
                    if cursor is None:
                        listed = await session.list_tools()
                    else:
                        from mcp.types import PaginatedRequestParams

                        listed = await session.list_tools(params=PaginatedRequestParams(cursor=cursor))
                    tools += [_dump(t) for t in listed.tools]
                    cursor = getattr(listed, "next_cursor", None) or getattr(listed, "nextCursor", None)
                    if not cursor:
                        break
                self.session = session
                ready.set_result(tools)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                if isinstance(exc, Exception):
                    ready.set_exception(_root(exc))
                else:  # cancelled (start-up timed out): nobody waits for the outcome
                    ready.cancel()
            if not isinstance(exc, Exception):
                raise
        finally:
            self.session = None

    async def _call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if self.session is None:
            raise MemplugError(f"the MCP server {self.target.url or shlex.join(self.target.argv)} is gone")
        result = _dump(await asyncio.wait_for(self.session.call_tool(name, arguments), self.timeout))
        if result.get("isError"):
            said = " ".join(b.get("text", "") for b in result.get("content") or () if b.get("type") == "text")
            raise RuntimeError(f"MCP tool {name} failed: {' '.join(said.split())[:500]}")
        return result

    def call(self, name: str, arguments: dict[str, Any]) -> concurrent.futures.Future[dict[str, Any]]:
        """Calls a tool on the connection's loop; the future holds the result as wire JSON."""
        return asyncio.run_coroutine_threadsafe(self._call(name, arguments), self.loop)

    def close(self) -> None:
        """Leaves the session and the transport (a stdio server is stopped), then the loop and its thread."""
        if self.loop.is_closed():
            return
        owner, stop = self._owner, self._stop

        async def finish() -> None:
            if stop is not None:
                stop.set()
            if owner is not None:
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(owner, 20)

        try:
            if self.loop.is_running():
                with contextlib.suppress(Exception):
                    asyncio.run_coroutine_threadsafe(finish(), self.loop).result(timeout=30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)
            if not self._thread.is_alive():
                self.loop.close()
            if self._log is not None:
                self._log.close()
                self._log = None


class _Shared:
    """Servers shared by a run's samples (isolation=user over stdio), held while any sample uses them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.held: dict[Target, list[Any]] = {}  # target -> [connection, holders, timer]

    def acquire(self, target: Target, start: Any) -> Connection:
        with self.lock:
            entry = self.held.get(target)
            if entry is not None:
                entry[1] += 1
                if entry[2] is not None:
                    entry[2].cancel()
                    entry[2] = None
                return cast(Connection, entry[0])
        connection: Connection = start()  # outside the lock: a server takes seconds to start
        with self.lock:
            entry = self.held.get(target)
            if entry is not None:  # another sample started it meanwhile
                entry[1] += 1
                extra = connection
            else:
                self.held[target] = [connection, 1, None]
                extra = None
        if extra is not None:
            extra.close()
            return cast(Connection, self.held[target][0])
        return connection

    def keep(self, target: Target, connection: Connection) -> None:
        """Holds a started connection (preflight's) for the run's first sample, for LINGER_S at most."""
        with self.lock:
            if target in self.held:
                connection.close()
                return
            self.held[target] = [connection, 1, None]
        self.release(target)

    def release(self, target: Target, linger: float | None = None) -> None:
        with self.lock:
            entry = self.held.get(target)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] > 0:
                return
            timer = threading.Timer(LINGER_S if linger is None else linger, self._expire, (target, entry))
            timer.daemon = True
            entry[2] = timer
            timer.start()

    def _expire(self, target: Target, entry: list[Any]) -> None:
        with self.lock:
            if self.held.get(target) is not entry or entry[1] > 0:
                return
            del self.held[target]
        entry[0].close()

    def close_all(self) -> None:
        with self.lock:
            entries = list(self.held.values())
            self.held.clear()
        for connection, _, timer in entries:
            if timer is not None:
                timer.cancel()
            connection.close()


SHARED = _Shared()
atexit.register(SHARED.close_all)


def close_shared() -> None:
    """Stops the servers the run's samples shared (called at the end of a run, and at exit)."""
    SHARED.close_all()


# -- the agent ---------------------------------------------------------------


class McpAgent:
    """A memory behind an MCP server: one tool writes, one searches; the run's reader answers."""

    options = (
        Option(
            "command", str, "", "stdio server command line (split like a shell; {workdir}: the sample's work directory)"
        ),
        Option("url", str, "", "streamable-HTTP server URL, e.g. http://127.0.0.1:8000/mcp"),
        Option(
            "add",
            str,
            "",
            "tool that writes a memory (default: the first of add_memory, store_memory, "
            "save_memory, remember, add, ...)",
        ),
        Option(
            "search",
            str,
            "",
            "tool that searches (default: the first of search_memory, search_memories, search, recall, query, ...)",
        ),
        Option(
            "add_args",
            str,
            "",
            "JSON object of the write tool's arguments, with {text}, {user}, {id}, {ids} "
            "filled in (default: read from its input schema)",
        ),
        Option(
            "search_args",
            str,
            "",
            "JSON object of the search tool's arguments, with {query}, {user}, {k} "
            "filled in (default: read from its input schema)",
        ),
        Option(
            "user_arg",
            str,
            "",
            "argument that keeps samples apart (default: user_id, namespace, session_id, "
            "... where the tools take one; none: pass none)",
        ),
        Option(
            "isolation",
            str,
            "auto",
            "user: one server, a user id per sample; server: one stdio server per "
            "sample; none: samples share one memory; auto: user where the tools allow it, else server",
            choices=("auto", "user", "server", "none"),
        ),
        Option("unit", str, "message", "what one write holds", choices=("message", "chunk")),
        Option("env", str, "", "extra environment of the stdio server: KEY=VALUE words ({workdir} filled in)"),
        Option("cwd", str, "", "working directory of the stdio server ({workdir} filled in; default: memplug's)"),
        Option("timeout", float, 60.0, "seconds to start the server and per tool call", low=0.1, high=3600.0),
    )

    @classmethod
    def preflight(cls, values: Mapping[str, Any], given: Mapping[str, str], llm: "LLM | None") -> AgentPlan:
        """Starts the server once: its tools must serve; the plan (tools, arguments, isolation) is the note."""
        if bool(values["command"]) == bool(values["url"]):
            raise MemplugError(
                "agent 'mcp' needs one MCP server: -o command=\"...\" starts a stdio server, "
                "-o url=http://host:port/mcp reaches a streamable-HTTP one"
                + ("" if not values["command"] else "; not both")
            )
        _import_sdk()
        plan: Plan
        with tempfile.TemporaryDirectory(prefix="memplug-mcp-") as scratch:
            target = Target.of(values, Path(scratch))
            target.check()
            connection = Connection(target, values["timeout"], Path(scratch) / "server.log")
            try:
                plan = make_plan(connection.tools, values)
            except BaseException:
                connection.close()
                raise
            if plan.isolation != "server" and not target.url:
                SHARED.keep(target, connection)  # the run's samples start on it
            else:
                connection.close()
        chosen = dict(values)
        chosen["add"], chosen["search"], chosen["isolation"] = plan.add.name, plan.search.name, plan.isolation
        return AgentPlan(chosen, plan.note(_where(values)))

    def __init__(self, config: AgentConfig, workdir: Path) -> None:
        _import_sdk()
        self.config = config
        self.values = resolve(self.options, config.options, "agent 'mcp'")
        self.unit_chunk = self.values["unit"] == "chunk"
        run = Path(workdir).parent.parent.name
        sample = config.sample_id or Path(workdir).name
        self.user = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"memplug-{run}-{sample}")[:120]
        #: stored text -> message ids, for recalled items that hold what was written
        self.ids: dict[str, list[str]] = {}
        target = Target.of(self.values, Path(workdir))
        target.check()
        self.target = target
        # a run's samples share one stdio server when preflight chose so (user ids keep them apart,
        # or -o isolation=none); "auto" (an agent built without preflight) starts its own
        self.shared = self.values["isolation"] in ("user", "none") and not target.url
        if self.shared:
            log = Path(workdir).parent / "mcp-server.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            self.connection = SHARED.acquire(target, lambda: Connection(target, self.values["timeout"], log))
        else:
            log = None
            if not target.url:
                Path(workdir).mkdir(parents=True, exist_ok=True)
                log = Path(workdir) / "mcp-server.log"
            self.connection = Connection(target, self.values["timeout"], log)
        try:
            self.plan = make_plan(self.connection.tools, self.values)
        except BaseException:
            self._let_go()
            raise

    # -- writing
    def _writes(self, chunk: Chunk) -> list[tuple[str, list[str]]]:
        if self.unit_chunk:
            return [(chunk_text(chunk), list(chunk.message_ids))]
        return [(message_text(m), [m.id]) for m in chunk.messages]

    def _remember(self, text: str, ids: list[str]) -> None:
        known = self.ids.setdefault(text.strip(), [])
        known.extend(i for i in ids if i not in known)

    def _add_call(self, text: str, ids: list[str]) -> concurrent.futures.Future[dict[str, Any]]:
        return self.connection.call(
            self.plan.add.name, self.plan.add.arguments(text, self.user, self.config.top_k, ids)
        )

    def ingest(self, chunk: Chunk) -> None:
        for text, ids in self._writes(chunk):
            self._add_call(text, ids).result()
            self._remember(text, ids)

    async def aingest(self, chunk: Chunk) -> None:
        for text, ids in self._writes(chunk):
            await asyncio.wrap_future(self._add_call(text, ids))
            self._remember(text, ids)

    # -- searching
    def _search_call(self, question: AgentQuestion) -> concurrent.futures.Future[dict[str, Any]]:
        args = self.plan.search.arguments(question.text, self.user, self.config.top_k)
        return self.connection.call(self.plan.search.name, args)

    def _recall(self, result: dict[str, Any]) -> Recall:
        found = [(text, score, ids or self._ids_of(text)) for text, score, ids in result_items(result)]
        if any(ids for text, _, ids in found if isinstance(text, _Line)):
            # a plain-text listing where some lines are stored texts: the others are its headers,
            # hashes and dates, not memories, and must not take places in the top K
            found = [item for item in found if item[2] or not isinstance(item[0], _Line)]
        items = [Recalled(text=str(text), score=score, message_ids=ids) for text, score, ids in found]
        return Recall(items=tuple(items[: self.config.top_k]))

    def _ids_of(self, text: str) -> tuple[str, ...]:
        """The message ids of the stored texts this item holds (or of the stored text that holds it)."""
        key = text.strip()
        if key in self.ids:
            return tuple(self.ids[key])
        found: list[str] = []
        for stored, ids in self.ids.items():
            if (len(stored) >= 8 and stored in key) or (len(key) >= 16 and key in stored):
                found.extend(i for i in ids if i not in found)
        return tuple(found)

    def recall(self, question: AgentQuestion) -> Recall:
        return self._recall(self._search_call(question).result())

    async def arecall(self, question: AgentQuestion) -> Recall:
        return self._recall(await asyncio.wrap_future(self._search_call(question)))

    # -- closing
    def _let_go(self) -> None:
        if self.shared:
            SHARED.release(self.target)
        else:
            self.connection.close()

    def close(self) -> None:
        """A sample's own server stops; a shared one is released (it stops when no sample holds it)."""
        self._let_go()

    async def aclose(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)


def _import_sdk() -> None:
    try:
        import mcp  # noqa: F401
        from mcp import ClientSession  # noqa: F401
    except ImportError as exc:
        raise MemplugError(f"agent 'mcp' needs the mcp SDK: pip install 'memplug[mcp]' ({exc})") from None

"""Plugin discovery and the registries of datasets, agents, metrics, readers, judges and
official exports.

Plugins are found through the ``memplug`` entry-point group; memplug's own built-ins
come through the same group. A plugin that fails to import or to register is kept
in :attr:`Plugins.broken` and reported by ``memplug list``; the others keep working.

``MEMPLUG_LOAD_PLUGINS=a,b`` loads only the named third-party plugins (entry-point
or distribution names); an empty value loads none. memplug's own always load.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import importlib.util
import os
import re
from typing import Any, Iterator

import attrs
import pluggy

from memplug import hookspecs
from memplug.errors import MemplugError, MissingExtra, did_you_mean
from memplug.text import clip

KINDS = ("datasets", "agents", "metrics", "readers", "judges", "exports")
SELF = "memplug"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@\-]*$")


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it. For a dotted name,
    ``find_spec`` imports the parents and raises when one is missing ("llama_index.core"
    without llama_index): that is "not installed" too, not a crash of `memplug list`."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


@attrs.define
class Entry:
    """A registered item: a name, a lazy target, and who registered it."""

    kind: str
    name: str
    target: Any
    plugin: str
    version: str | None
    info: dict[str, Any]
    _loaded: Any = None

    @property
    def missing(self) -> list[str]:
        """Modules listed in ``requires`` that are not installed (checked without importing)."""
        return [m for m in self.info.get("requires", ()) if not _installed(m)]

    @property
    def install_hint(self) -> str | None:
        extra = self.info.get("extra")
        if extra:
            return f"pip install 'memplug[{extra}]'"
        if self.missing:
            return "pip install " + " ".join(self.missing)
        return None

    def load(self) -> Any:
        """Import the target (once); a missing extra becomes one line saying what to install."""
        if self._loaded is not None:
            return self._loaded
        if self.missing:
            raise MissingExtra(f"{self.kind[:-1]} {self.name!r} needs {', '.join(self.missing)}: {self.install_hint}")
        target = self.target
        if isinstance(target, str):
            module_name, _, attr = target.partition(":")
            try:
                obj: Any = importlib.import_module(module_name)
                for part in attr.split("."):
                    obj = getattr(obj, part)
            except ImportError as exc:
                raise MemplugError(
                    f"{self.kind[:-1]} {self.name!r} from plugin {self.plugin!r} failed to import {target}: {exc}"
                ) from exc
            except AttributeError as exc:
                raise MemplugError(f"{self.kind[:-1]} {self.name!r}: {target} not found ({exc})") from exc
            target = obj
        self._loaded = target
        return target

    def describe(self, with_options: bool = True) -> dict[str, Any]:
        """A JSON-friendly description; options are read from the target when it imports."""
        out: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind[:-1],
            "plugin": self.plugin,
            "version": self.version,
            "target": self.target if isinstance(self.target, str) else repr(self.target),
            "available": not self.missing,
            "install": self.install_hint if self.missing else None,
            "description": self.info.get("description", ""),
        }
        if with_options and not self.missing:
            try:
                target = self.load()
            except MemplugError as exc:
                out["available"] = False
                out["error"] = str(exc)
            else:
                from memplug.protocols import options_of

                out["options"] = [o.describe() for o in options_of(target)]
                info = getattr(target, "info", None)
                if info is not None:
                    out["description"] = out["description"] or info.description
                    out["dataset_version"] = info.version
                if not out["description"] and target.__doc__:
                    out["description"] = target.__doc__.strip().splitlines()[0]
        return out


class Registry:
    """Named items of one kind, with duplicate and typo checks."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Entry] = {}
        #: plugins that failed to load (set by Plugins): an unknown name may be theirs
        self.broken: list["Broken"] = []

    def add(self, entry: Entry) -> "Clash | None":
        """Register ``entry``. A name taken already is a clash, returned (not raised: the
        plugin's other names still register). memplug's own entry wins a clash whichever
        came first, so a plugin cannot replace a built-in by name; between two others the
        first stays."""
        if not isinstance(entry.name, str) or not _NAME.match(entry.name):
            raise MemplugError(f"{self.kind[:-1]} name {entry.name!r} from {entry.plugin!r} is not a valid name")
        if isinstance(entry.target, str) and ":" not in entry.target:
            raise MemplugError(
                f"{self.kind[:-1]} {entry.name!r} from {entry.plugin!r}: target {entry.target!r} must be 'module:attr'"
            )
        other = self._entries.get(entry.name)
        if other is None:
            self._entries[entry.name] = entry
            return None
        kept, dropped = (entry, other) if entry.plugin == SELF and other.plugin != SELF else (other, entry)
        self._entries[entry.name] = kept
        return Clash(self.kind, entry.name, kept, dropped)

    def get(self, name: str) -> Entry:
        """The entry called ``name``, or one line saying why there is none: the closest
        name, and the installed plugins that failed to load (one of them may have it)."""
        try:
            return self._entries[name]
        except KeyError:
            pass
        what = self.kind[:-1]
        claimed = [b for b in self.broken if b.claims(name)]
        if claimed:
            b = claimed[0]
            ep = f" (entry point {b.entry_point!r})" if b.entry_point not in (None, b.dist, name) else ""
            raise MemplugError(
                f"{what} {name!r} is not available: it is installed by {b.label}{ep} but failed "
                f"to load: {b.short_error} (see `memplug list`)"
            )
        known = sorted(self._entries)
        message = f"unknown {what} {name!r}{did_you_mean(name, known)}; installed: {', '.join(known) or 'none'}"
        if self.broken:
            shown = "; ".join(f"{b.label}: {b.short_error}" for b in self.broken[:3])
            more = f"; and {len(self.broken) - 3} more" if len(self.broken) > 3 else ""
            message += f"; {len(self.broken)} installed plugin(s) failed to load: {shown}{more}"
        raise MemplugError(message + " (see `memplug list`)")

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[Entry]:
        return iter(sorted(self._entries.values(), key=lambda e: e.name))

    def names(self) -> list[str]:
        return sorted(self._entries)


def _label(dist: str, version: str | None) -> str:
    return f"{dist} {version}" if version else dist


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.lower())


@attrs.frozen
class Clash:
    """A name registered twice: the entry kept and the one ignored."""

    kind: str
    name: str
    kept: Entry
    dropped: Entry

    def __str__(self) -> str:
        what = f"{self.kind[:-1]} {self.name!r}"
        kept, dropped = _label(self.kept.plugin, self.kept.version), _label(self.dropped.plugin, self.dropped.version)
        if self.kept.plugin == self.dropped.plugin:
            return f"{what} is registered twice by {kept}; the first is used, the second ignored"
        return f"{what} is registered by both {kept} and {dropped}; {kept}'s is used, {dropped}'s is ignored"


@attrs.frozen
class Broken:
    """A plugin that could not be loaded or registered, or a name it registered that clashed.

    ``stage`` is ``"load"`` (its entry point failed to import, or its hooks are invalid:
    nothing of it registered), ``"register_<kind>"`` (its hook for that kind raised) or
    ``"clash"`` (a name of it was taken; its other names work)."""

    plugin: str  # for display: "dist (entry point)" or the distribution
    version: str | None
    error: str
    stage: str = "load"
    dist: str | None = None
    entry_point: str | None = None

    @property
    def label(self) -> str:
        return _label(self.dist or self.plugin, self.version)

    @property
    def short_error(self) -> str:
        """The error on one line, at most 300 characters (``memplug list`` shows it whole)."""
        return clip(" ".join(self.error.split()), 300)

    def claims(self, name: str) -> bool:
        """Whether a missing ``name`` is likely this plugin's: its entry point is called
        so, or its distribution's name contains it (memplug-graphiti for graphiti)."""
        wanted = _norm(name)
        if not wanted or wanted == SELF:
            return False
        if self.entry_point and _norm(self.entry_point) == wanted:
            return True
        dist = _norm(self.dist or self.plugin)
        return wanted in dist.split("-") or (len(wanted) >= 4 and wanted in dist)


class Plugins:
    """The plugin manager and the registries it filled."""

    def __init__(self, load_entry_points: bool = True) -> None:
        self.pm = pluggy.PluginManager("memplug")
        self.pm.add_hookspecs(hookspecs)
        self.broken: list[Broken] = []
        self._dists: dict[int, tuple[str, str | None]] = {}
        self._entry_points: dict[int, str] = {}
        self._registries: dict[str, Registry] | None = None
        if load_entry_points:
            self._load_entry_points()

    def _load_entry_points(self) -> None:
        wanted = os.environ.get("MEMPLUG_LOAD_PLUGINS")
        allow = None if wanted is None else {w.strip() for w in wanted.split(",") if w.strip()}
        for ep in md.entry_points(group="memplug"):
            dist = ep.dist.name if ep.dist else ep.name
            version = ep.dist.version if ep.dist else None
            if allow is not None and dist != SELF and ep.name not in allow and dist not in allow:
                continue
            try:
                module = ep.load()
            except Exception as exc:  # a broken plugin must not break the others
                self.broken.append(
                    Broken(
                        f"{dist} ({ep.name})", version, f"{type(exc).__name__}: {exc}", dist=dist, entry_point=ep.name
                    )
                )
                continue
            if self.pm.is_registered(module):
                continue
            problem = self._register_checked(module, f"{dist}:{ep.name}")
            if problem:
                self.broken.append(Broken(f"{dist} ({ep.name})", version, problem, dist=dist, entry_point=ep.name))
                continue
            self._dists[id(module)] = (dist, version)
            self._entry_points[id(module)] = ep.name

    def _register_checked(self, plugin: object, name: str) -> str | None:
        """Register one plugin on its own and validate it, as pluggy's check_pending does:
        a hook implementation with an argument the spec lacks, or a hook no spec names (a
        misspelt ``register_agent``), is that plugin's problem, returned as a message
        with the plugin left out; the others work."""
        try:
            self.pm.register(plugin, name=name)
        except pluggy.PluginValidationError as exc:
            return f"invalid hook implementation: {exc}"
        unknown = [
            impl.function.__name__
            for impls in self.pm.get_hookcallers(plugin) or []
            for impl in impls.get_hookimpls()
            if impl.plugin is plugin and not impls.has_spec()
        ]
        if unknown:
            self.pm.unregister(plugin)
            return f"hook {unknown[0]!r} is not a memplug hook (misspelt? see docs/hooks.md)"
        return None

    def register(self, plugin: object, name: str | None = None, dist: str = "test", version: str | None = None) -> None:
        """Register a plugin object directly (tests, programmatic use)."""
        self.pm.register(plugin, name=name)
        self._dists[id(plugin)] = (dist, version)
        self._registries = None

    def unregister(self, plugin: object) -> None:
        self.pm.unregister(plugin)
        self._dists.pop(id(plugin), None)
        self._entry_points.pop(id(plugin), None)
        self._registries = None

    def _collect(self) -> dict[str, Registry]:
        registries = {kind: Registry(kind) for kind in KINDS}
        self.broken = [b for b in self.broken if b.stage == "load"]  # the rest is this collection's
        for kind in KINDS:
            hook = getattr(self.pm.hook, f"register_{kind}")
            for impl in hook.get_hookimpls():
                dist, version = self._dists.get(id(impl.plugin), (impl.plugin_name, None))
                ep = self._entry_points.get(id(impl.plugin))
                shown = f"{dist} ({ep})" if ep and ep != dist else dist

                def register(
                    name: str,
                    target: Any,
                    _d: str = dist,
                    _v: str | None = version,
                    _k: str = kind,
                    _s: str = shown,
                    _ep: str | None = ep,
                    **info: Any,
                ) -> None:
                    try:
                        clash = registries[_k].add(Entry(_k, name, target, _d, _v, info))
                    except MemplugError as exc:  # a bad name or target: that one is left out
                        self.broken.append(
                            Broken(_s, _v, f"register_{_k}: {exc}", f"register_{_k}", dist=_d, entry_point=_ep)
                        )
                        return
                    if clash:  # reported as the ignored side's problem; both are named
                        self.broken.append(
                            Broken(
                                clash.dropped.plugin,
                                clash.dropped.version,
                                f"register_{_k}: {clash}",
                                "clash",
                                dist=clash.dropped.plugin,
                            )
                        )

                try:
                    impl.function(register=register)
                except Exception as exc:  # the names it registered before raising stay
                    self.broken.append(
                        Broken(
                            shown,
                            version,
                            f"register_{kind}: {type(exc).__name__}: {exc}",
                            f"register_{kind}",
                            dist=dist,
                            entry_point=ep,
                        )
                    )
        for kind, registry in registries.items():
            # an unknown name may belong to a plugin that failed to load, or whose hook for
            # this kind raised; a clash lost one name, which the kept entry answers
            registry.broken = [b for b in self.broken if b.stage in ("load", f"register_{kind}")]
        return registries

    def registry(self, kind: str) -> Registry:
        """The items of one kind (one of KINDS), collected from the plugins' hooks on first use."""
        if self._registries is None:
            self._registries = self._collect()
        return self._registries[kind]

    @property
    def hook(self) -> Any:
        return self.pm.hook


_current: Plugins | None = None


def get_plugins() -> Plugins:
    """The process-wide plugin manager, created on first use."""
    global _current
    if _current is None:
        _current = Plugins()
    return _current


def reset_plugins(plugins: Plugins | None = None) -> None:
    """Replace (or forget) the process-wide plugin manager; tests use this."""
    global _current
    _current = plugins

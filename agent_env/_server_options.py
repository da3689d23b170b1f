"""The server's options, each defined once: its name, type, default and what it does.

`ServerOptions` are what a served bundle does (its capacity, sandbox, token, recording, judges...):
`build_app` and `AgentEnv.local` take them. `ServeOptions` add where `serve` listens (`host`, `port`,
`insecure_no_token`). Every entry point reads them from here: `build_app(bundle, **options)`,
`serve(bundle, **options)` and `AgentEnv.local(bundle, **options)` check their keywords against these
fields (`options_of`: an unknown one is refused with the nearest name), and `agent-env serve` makes
its flags from them (`Flag`, `add_flags`), so a default or a description is written once.

The core's, since the command line builds its parser from it without the `openenv` extra; nothing of
the server is imported here.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from agent_env._contracts.registry import sandbox_names
from agent_env._errors import ArgumentError, ArgumentTypeError
from agent_env._nearest import did_you_mean
from agent_env._trajectory_recorder import DEFAULT_MAX_MB
from agent_env.judges._judging import CACHE_VARIABLE, KEY_VARIABLE, MODEL_VARIABLE, URL_VARIABLE

if TYPE_CHECKING:
    from agent_env._contracts.sandbox import SandboxProvider

DEFAULT_MAX_CONCURRENT_ENVS = 64
"""Sessions one server holds at once unless `max_concurrent_envs=` or `MAX_CONCURRENT_ENVS` says otherwise."""

CAPACITY_VARIABLE = "MAX_CONCURRENT_ENVS"


@dataclass(frozen=True)
class Flag:
    """How `agent-env serve` takes an option: its flag, and what argparse needs beyond the option's
    name (its `dest`), default and description (its help)."""

    name: str
    metavar: str | None = None
    type: Callable[[str], Any] | None = None
    action: str | None = None
    choices: Callable[[], tuple[str, ...]] | None = None
    """The values it takes, asked when a parser is made (the sandbox providers installed then)."""


def about(doc: str, flag: Flag | None) -> dict[str, Any]:
    """An option's metadata: its description (`{default}` in it is the default) and its flag (None:
    the command line takes it otherwise, as the token is, by `--token` or `--token-file`)."""
    return {"doc": doc, "flag": flag}


@dataclass(frozen=True, kw_only=True)
class ServerOptions:
    """What a served bundle does: `build_app`'s and `AgentEnv.local`'s options, and `serve`'s besides
    where it listens. Each option, its default and what it does:"""

    max_concurrent_envs: int | None = field(
        default=None,
        metadata=about(
            f"sessions held at once (default: ${CAPACITY_VARIABLE}, else {DEFAULT_MAX_CONCURRENT_ENVS})",
            Flag("--max-concurrent-envs", metavar="N", type=int),
        ),
    )
    sandbox: str | SandboxProvider | None = field(
        default=None,
        metadata=about(
            "the sandbox provider, by name (or, from Python, a SandboxProvider) (default: the bundle's)",
            Flag("--sandbox", choices=sandbox_names),
        ),
    )
    warm: int | None = field(
        default=None,
        metadata=about(
            "docker sandbox: keep N containers started ahead of the episodes (default: the bundle's "
            "[sandbox] warm, else 0; Harbor tasks: N per image)",
            Flag("--warm", metavar="N", type=int),
        ),
    )
    allow_internet: bool = field(
        default=False,
        metadata=about(
            "give the tasks that ask for the internet (Harbor's [environment] allow_internet) a network; "
            "without it, no sandbox has one",
            Flag("--allow-internet", action="store_true"),
        ),
    )
    skip_broken_tasks: bool = field(
        default=False,
        metadata=about(
            "leave out the tasks that do not load (a Harbor task folder, a line of tasks/SPLIT.jsonl), "
            "listing each with its first problem, and run the others; problems no one task has still stop "
            "it (default: any problem stops it)",
            Flag("--skip-broken-tasks", action="store_true"),
        ),
    )
    judge_url: str | None = field(
        default=None,
        metadata=about(
            "the OpenAI-compatible endpoint every judge verifier asks, instead of its own; its key is "
            f"${KEY_VARIABLE} (default: ${URL_VARIABLE}, else each judge's url)",
            Flag("--judge-url", metavar="URL"),
        ),
    )
    judge_model: str | None = field(
        default=None,
        metadata=about(
            f"the model every judge verifier asks, instead of its own (default: ${MODEL_VARIABLE})",
            Flag("--judge-model", metavar="NAME"),
        ),
    )
    judge_cache: str | Path | None = field(
        default=None,
        metadata=about(
            "keep the judges' verdicts in this folder, so an identical judgement is asked once, across runs "
            f"(default: ${CACHE_VARIABLE}, else memory alone)",
            Flag("--judge-cache", metavar="DIR"),
        ),
    )
    token: str | None = field(
        default=None,
        metadata=about(
            "require this bearer token on every route and the WebSocket (default: $AGENTENV_TOKEN, if set)",
            None,
        ),
    )
    allowed_hosts: Iterable[str] | None = field(
        default=None,
        metadata=about(
            "also answer requests addressed to these host names, as behind a proxy or a Service's name "
            "(the flag once per name; * for any; default: $AGENTENV_ALLOWED_HOSTS, comma-separated). "
            "Loopback names and IP addresses are always answered",
            Flag("--allow-host", metavar="NAME", action="append"),
        ),
    )
    record: str | Path | None = field(
        default=None,
        metadata=about(
            "write each episode's trajectory to this folder as a JSON line once it is torn down (the token "
            "and what the bundle's [record] marks secret redacted)",
            Flag("--record", metavar="DIR"),
        ),
    )
    record_max_mb: float = field(
        default=DEFAULT_MAX_MB,
        metadata=about(
            "start a new trajectory file once one reaches this size, in MB (default: {default:g})",
            Flag("--record-max-mb", metavar="MB", type=float),
        ),
    )
    env_name: str | None = field(
        default=None,
        metadata=about(
            "the {{env_name}} of the Task API's routes (default: the bundle's name)",
            Flag("--env-name", metavar="NAME"),
        ),
    )

    def __post_init__(self) -> None:
        for option in dataclasses.fields(self):
            value = getattr(self, option.name)
            if option.default is False and not isinstance(value, bool):
                raise ArgumentTypeError(f"{option.name} is True or False, got {value!r}")
        hosts = self.allowed_hosts
        if isinstance(hosts, str | bytes):
            raise ArgumentTypeError(
                f"allowed_hosts is a list of host names, got the string {hosts!r}: pass [{hosts!r}]"
            )
        if hosts is not None:
            object.__setattr__(self, "allowed_hosts", tuple(hosts))


@dataclass(frozen=True, kw_only=True)
class ServeOptions(ServerOptions):
    """`serve`'s options: the server's, and where it listens. Each option, its default and what it does:"""

    host: str = field(
        default="127.0.0.1",
        metadata=about(
            "the address to bind (default: {default}, loopback only); another address is refused "
            "without a token, unless insecure_no_token",
            Flag("--host"),
        ),
    )
    port: int = field(
        default=8000,
        metadata=about(
            "the port to bind; 0 takes a free one (default: {default})",
            Flag("--port", type=int),
        ),
    )
    insecure_no_token: bool = field(
        default=False,
        metadata=about(
            "serve off loopback without a token, which is refused otherwise: whoever reaches the address "
            "can run the bundle's tools and its sandbox's bash",
            Flag("--insecure-no-token", action="store_true"),
        ),
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.port, bool) or not isinstance(self.port, int) or not 0 <= self.port <= 65535:
            raise ArgumentError(f"port is a whole number from 0 to 65535 (0: a free one), got {self.port!r}")
        if not isinstance(self.host, str):
            raise ArgumentTypeError(f"host is an address to bind, such as '127.0.0.1', got {self.host!r}")


Options = TypeVar("Options", bound=ServerOptions)


def doc(kind: type[ServerOptions], name: str) -> str:
    """What option `name` does, its default said."""
    option = _fields(kind)[name]
    text: str = option.metadata["doc"]
    return text.format(default=option.default)


def describe(kind: type[ServerOptions]) -> str:
    """Every option of `kind`, a line each: its name, its default, what it does."""
    return "\n".join(f"- `{option.name}`: {doc(kind, option.name)}" for option in dataclasses.fields(kind))


def options_of(
    kind: type[Options], given: Mapping[str, Any], *, base: ServerOptions | None = None, caller: str
) -> Options:
    """`kind`'s options from `base` (default: every default) with `given`, the keywords of `caller`,
    over them; a keyword that is no option of `kind` is an `ArgumentError` naming the nearest."""
    known = _fields(kind)
    for name in given:
        if name not in known:
            raise ArgumentError(unknown_option(name, known, caller))
    if base is None:
        return kind(**given)
    kept = {name: getattr(base, name) for name in known if hasattr(base, name)}
    return kind(**{**kept, **given})


def unknown_option(name: str, known: Iterable[str], caller: str) -> str:
    """What to say of a keyword `name` that `caller` does not take, `known` being what it takes."""
    names = sorted(known)
    if name in _fields(ServeOptions):
        why = f"'{name}' is where serve() listens, and {caller} binds no address of its own"
        return f"{caller} takes no option '{name}': {why}"
    return f"{caller} takes no option '{name}'{did_you_mean(name, names)} (its options: {', '.join(names)})"


def add_flags(parser: argparse.ArgumentParser, kind: type[ServerOptions], *names: str) -> None:
    """The flags of `kind`'s options that have one (only `names`, if given), each its option's `dest`,
    default and description."""
    for option in dataclasses.fields(kind):
        flag: Flag | None = option.metadata["flag"]
        if flag is None or (names and option.name not in names):
            continue
        extra: dict[str, Any] = {
            key: value
            for key, value in (
                ("metavar", flag.metavar),
                ("type", flag.type),
                ("action", flag.action),
                ("choices", flag.choices() if flag.choices is not None else None),
            )
            if value is not None
        }
        described = doc(kind, option.name)
        parser.add_argument(flag.name, dest=option.name, default=option.default, help=described, **extra)


def from_flags(kind: type[Options], args: argparse.Namespace, **given: Any) -> Options:
    """`kind`'s options as parsed (`add_flags`'), with `given` (the token, say) over them."""
    parsed = {name: getattr(args, name) for name in _fields(kind) if hasattr(args, name)}
    return kind(**{**parsed, **given})


def _fields(kind: type[ServerOptions]) -> dict[str, dataclasses.Field[Any]]:
    return {option.name: option for option in dataclasses.fields(kind)}


ServerOptions.__doc__ = f"{ServerOptions.__doc__}\n\n{describe(ServerOptions)}"
ServeOptions.__doc__ = f"{ServeOptions.__doc__}\n\n{describe(ServeOptions)}"

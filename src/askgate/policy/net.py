"""The `net` surface: what a host and port look like to the policy (pure, no I/O).

A `[net]` rule matches one value, `HOST:PORT`, normalised (lower case, no trailing dot,
IDNA for non-ASCII names, IPv4 in dotted quad whatever spelling curl would accept,
IPv6 in brackets). A pattern without a port matches every port:

    [net]
    "registry.npmjs.org" = "allow"          # = "registry.npmjs.org:*"
    "*.pythonhosted.org:443" = "allow"
    "localhost:*" = "allow"                 # the host's own loopback ports (sandbox)
    "*" = "ask"                             # = "*:*"

`*` is any run of characters (dots included), `?` one character, as in every wildcard
surface; so `*.example.com` matches `a.b.example.com` but not `example.com`. The same
scopes and "which rule wins" apply as for the other surfaces.

Parsing is strict on purpose: an authority that two URL parsers could read differently
(`http://evil.example\\@good.example/`, two `@`, percent escapes, white space) is not a
host here, and whoever asks about it gets the policy's default, never a named host's
allow.
"""

from __future__ import annotations

import contextlib
import re
from functools import lru_cache
from typing import NamedTuple

from askgate.policy.lazy_regex import lazy_compile

# Ports a URL scheme implies when it names none.
SCHEME_PORTS: dict[str, int] = {
    "http": 80,
    "https": 443,
    "ws": 80,
    "wss": 443,
    "ftp": 21,
    "ftps": 990,
    "ssh": 22,
    "sftp": 22,
    "scp": 22,
    "git": 9418,
    "git+ssh": 22,
    "ssh+git": 22,
    "git+https": 443,
    "git+http": 80,
    "rsync": 873,
    "socks4": 1080,
    "socks4a": 1080,
    "socks5": 1080,
    "socks5h": 1080,
    "telnet": 23,
}
# Programs whose arguments name hosts (policy/shell/network.py knows how to read them);
# here, in a leaf module, so the engine can skip every other command without importing
# the shell analysis.
NETWORK_PROGRAMS = frozenset(
    {"curl", "wget", "wget2", "nc", "ncat", "netcat", "telnet", "socat", "ssh", "scp", "sftp",
     "rsync", "git", "pip", "pip3", "npm", "pnpm", "yarn", "npx", "cargo", "go", "uv"}
) | {f"python{v}" for v in ("", "3", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14")}  # fmt: skip
# An example or value given without a port is taken as HTTPS.
EXAMPLE_PORT = 443
UNKNOWN_PORT = 0  # the port could not be told (a pattern naming a port never matches)
MAX_HOST_LENGTH = 253

_NAME = lazy_compile(r"[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*")
# What inet_aton accepts and curl resolves as an address: 127.1, 0x7f.0.0.1, 2130706433.
_NUMERIC_V4 = lazy_compile(r"(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]+)){0,3}")
_PATTERN_HOST = lazy_compile(r"[a-z0-9_.*?-]+|\[[0-9a-f:.*?]+\]")
_PATTERN_PORT = lazy_compile(r"\*|[0-9]{1,5}")
# userinfo@host:port, each part free of anything another parser might read differently.
_AUTHORITY = lazy_compile(
    r"(?:(?P<user>[^@/\\?#\s%\[\]]*)@)?(?P<host>\[[0-9A-Fa-f:.]+\]|[^:@/\\?#\s%\[\]]+)"
    r"(?::(?P<port>[0-9]*))?"
)
_AUTHORITY_END = lazy_compile(r"[/?#]")
_SCHEME = lazy_compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<rest>.*)", re.DOTALL)


class NetTarget(NamedTuple):
    """A host and port as the policy sees them (`value` is what rules match)."""

    host: str
    port: int

    @property
    def value(self) -> str:
        return f"{self.host}:{self.port}"


@lru_cache(maxsize=4096)  # the same few hosts come back in command after command
def normalize_host(host: str) -> str:
    """The one spelling of `host`; ValueError when it is not a host name or address.
    Every name and address of this machine (127.0.0.0/8, ::1, `*.localhost` …) is
    spelled `localhost`, so `"localhost:*"` covers them all."""
    spelled = _spelling(host)
    return "localhost" if names_loopback(spelled) else spelled


def _spelling(host: str) -> str:
    text = host.strip().lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
        return f"[{_ipv6(text)}]"
    if ":" in text:
        return f"[{_ipv6(text)}]"
    text = text.removesuffix(".")
    if not text:
        raise ValueError("the host is empty")
    if not text.isascii():
        try:
            text = text.encode("idna").decode("ascii")
        except UnicodeError:
            raise ValueError(f"{host!r} is not a valid host name") from None
    if _NUMERIC_V4.fullmatch(text):
        import socket  # only for numeric hosts

        try:
            return socket.inet_ntoa(socket.inet_aton(text))
        except OSError:
            raise ValueError(f"{host!r} is not a valid IPv4 address") from None
    if len(text) > MAX_HOST_LENGTH or not _NAME.fullmatch(text):
        raise ValueError(f"{host!r} is not a valid host name")
    return text


def _ipv6(text: str) -> str:
    import ipaddress  # only for IPv6 hosts (a one-shot hook rarely sees one)

    try:
        return ipaddress.IPv6Address(text).compressed
    except ValueError:
        raise ValueError(f"{text!r} is not a valid IPv6 address") from None


def net_target(host: str, port: int) -> NetTarget:
    """A normalised target; ValueError for a bad host or port."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"invalid port {port!r}")
    return NetTarget(normalize_host(host), port)


def parse_value(value: str, *, default_port: int | None = None) -> NetTarget:
    """`HOST:PORT` (or `[v6]:PORT`; `HOST` alone when `default_port` is given)."""
    text = value.strip()
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ValueError(f"{value!r}: unclosed '['")
        host, rest = text[: end + 1], text[end + 1 :]
        port_text = rest[1:] if rest.startswith(":") else None
        if rest and port_text is None:
            raise ValueError(f"{value!r} is not HOST:PORT")
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    elif ":" in text:
        host, port_text = text, None  # a bare IPv6 address
    else:
        host, port_text = text, None
    if port_text is None:
        if default_port is None:
            raise ValueError(f"{value!r} has no port (write HOST:PORT)")
        return net_target(host, default_port)
    if not port_text.isdigit() or len(port_text) > 5:
        raise ValueError(f"{value!r}: the port must be a number")
    return net_target(host, int(port_text))


def parse_url(url: str, *, default_scheme: str | None = None) -> NetTarget | None:
    """The host and port a URL connects to, or None when that cannot be told for sure
    (unknown scheme and no port, an authority parsers could disagree on …)."""
    text = url.strip()
    match = _SCHEME.fullmatch(text)
    if match is not None:
        scheme, rest = match["scheme"].lower(), match["rest"]
    elif default_scheme is not None:
        scheme, rest = default_scheme, text
    else:
        return None
    authority = _AUTHORITY_END.split(rest, maxsplit=1)[0]
    parts = _AUTHORITY.fullmatch(authority)
    if parts is None:
        return None
    port_text = parts["port"]
    if port_text:
        if len(port_text) > 5:
            return None
        port = int(port_text)
    else:
        port = SCHEME_PORTS.get(scheme, UNKNOWN_PORT)
    try:
        return net_target(parts["host"], port)
    except ValueError:
        return None


_URL_IN_TEXT = lazy_compile(r"\b[A-Za-z][A-Za-z0-9+.-]{0,15}://[^\s\"'<>`]+")
MAX_URLS_IN_TEXT = 64


def urls_in(text: str) -> list[str] | None:
    """The URLs written in free text (an MCP argument, a prompt), in order; None when
    there are more than MAX_URLS_IN_TEXT (the caller asks rather than check a sample)."""
    found = [match.group().rstrip(".,;:!?)]}") for match in _URL_IN_TEXT.finditer(text)]
    return None if len(found) > MAX_URLS_IN_TEXT else found


def parse_example(text: str) -> NetTarget:
    """A rule example: `HOST:PORT`, a URL, or a bare `HOST` (taken as port 443)."""
    if "://" in text:
        found = parse_url(text)
        if found is None:
            raise ValueError(f"{text!r}: no host and port can be read from this URL")
        return found
    return parse_value(text, default_port=EXAMPLE_PORT)


def validate_net_pattern(pattern: str) -> None:
    """ValueError unless `pattern` is `HOSTPATTERN` or `HOSTPATTERN:PORTPATTERN`."""
    host, port = _split_pattern(pattern.lower())
    if not _PATTERN_HOST.fullmatch(host):
        raise ValueError(
            "a net pattern is HOST or HOST:PORT (letters, digits, . - _ * ?; IPv6 in [ ])"
        )
    if port is not None and not _PATTERN_PORT.fullmatch(port):
        raise ValueError("the port of a net pattern is a number or *")
    if port is not None and port != "*" and int(port) > 65535:
        raise ValueError("the port of a net pattern is at most 65535")


def _split_pattern(pattern: str) -> tuple[str, str | None]:
    if pattern.startswith("["):
        end = pattern.find("]")
        if end < 0:
            raise ValueError("unclosed '[' in a net pattern")
        rest = pattern[end + 1 :]
        if rest and not rest.startswith(":"):
            raise ValueError("a net pattern is HOST or HOST:PORT")
        return pattern[: end + 1], (rest[1:] if rest else None)
    if pattern.count(":") > 1:
        raise ValueError("write an IPv6 address in brackets: [::1]:8080")
    host, sep, port = pattern.partition(":")
    return host, (port if sep else None)


def net_pattern_text(pattern: str) -> str:
    """The wildcard a net pattern compiles to: lower case, `:*` added when it names no
    port (`*` -> `*:*`). Invalid patterns come back lowered (the loader rejects them)."""
    lowered = pattern.strip().lower()
    try:
        host, port = _split_pattern(lowered)
    except ValueError:
        return lowered
    if not any(char in host for char in "*?"):
        with contextlib.suppress(ValueError):  # (the loader has rejected it already)
            host = normalize_host(host)  # 127.0.0.1 -> localhost, as values are
    return f"{host}:{port if port is not None else '*'}"


def is_loopback(address: str) -> bool:
    """An address of the machine itself (127/8, ::1, ::ffff:127.x)."""
    import ipaddress

    try:
        parsed = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return False
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
        parsed = parsed.ipv4_mapped
    return parsed.is_loopback


LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def names_loopback(host: str) -> bool:
    """A host spelling that means this machine whatever DNS says."""
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    return (host[:1].isdigit() or host.startswith("[")) and is_loopback(host)

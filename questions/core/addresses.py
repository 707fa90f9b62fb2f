"""Where a webhook may be sent: the one policy that both saving an endpoint and sending to it
apply (pure Python, no Django; the only I/O is `resolve`, through the swappable `getaddrinfo`).

A webhook URL is `http` or `https`, with a host and nothing that could change what is asked of
whom: no user name or password (`user:pass@`), no whitespace or control character anywhere (a
CR/LF could add a header), none percent-encoded either, no backslash, no zone index, and an
IPv4 address only in its plain dotted form (2130706433, 0x7f000001, 0177.0.0.1 and 127.1 all
mean 127.0.0.1 to a resolver; they are refused, naming the address they mean).

The address it goes to must be public. By default these are refused (IPv4 and IPv6, and the
IPv4 address inside an IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, 6to4
`2002:aabb:ccdd::` or Teredo address):

- loopback (127.0.0.0/8, ::1, and the names `localhost`, `*.localhost`) and private networks
  (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, the carrier-grade NAT 100.64.0.0/10, fc00::/7):
  these, and only these, `DECISIONS__WEBHOOK_ALLOW_PRIVATE=1` allows, for a deployment whose
  runtime lives on its own network (and for the tests and the demo, whose receivers are on
  127.0.0.1);
- always, whatever that variable says: the cloud metadata services (169.254.169.254,
  169.254.170.2, fd00:ec2::254, 100.100.100.200 and the names `metadata.google.internal`,
  `metadata.goog`, `metadata`, `instance-data`, `instance-data.ec2.internal`), link-local
  (169.254.0.0/16, fe80::/10), unspecified (0.0.0.0/8, ::), multicast (224.0.0.0/4,
  ff00::/8) and reserved ranges (240.0.0.0/4 and the broadcast address, the documentation,
  benchmarking and protocol-assignment ranges, the IPv4-compatible ::/96, site-local,
  discard-only, the local-use NAT64 prefix, and anything else the IANA registries do not call
  globally reachable).

Saving checks a literal address, and the addresses a name resolves to now (a name that does not
resolve yet is accepted); sending resolves the name again and checks every address it resolves
to before it connects to one of them (`questions.engine.webhooks.post`), so a DNS answer that
changed since cannot send it elsewhere.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import threading
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

ALLOW_PRIVATE_VARIABLE: Final = "DECISIONS__WEBHOOK_ALLOW_PRIVATE"
SCHEMES: Final = {"http": 80, "https": 443}

#: what each refused kind is called, and whether ALLOW_PRIVATE lets it through
ALLOWABLE: Final = {"loopback", "private"}

METADATA_ADDRESSES: Final = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200")
)
METADATA_NAMES: Final = frozenset(
    {
        "metadata.google.internal",
        "metadata.goog",
        "metadata",
        "instance-data",
        "instance-data.ec2.internal",
    }
)
LOOPBACK_NAMES: Final = frozenset(
    {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}
)

_N = ipaddress.ip_network
#: (kind, words, networks), first match wins; metadata addresses come before all of these
RANGES: Final = (
    ("unspecified", "an unspecified address", (_N("0.0.0.0/8"), _N("::/128"))),
    ("loopback", "a loopback address", (_N("127.0.0.0/8"), _N("::1/128"))),
    ("link-local", "a link-local address", (_N("169.254.0.0/16"), _N("fe80::/10"))),
    ("multicast", "a multicast address", (_N("224.0.0.0/4"), _N("ff00::/8"))),
    (
        "private",
        "a private address",
        (_N("10.0.0.0/8"), _N("172.16.0.0/12"), _N("192.168.0.0/16"), _N("fc00::/7")),
    ),
    ("private", "a carrier-grade NAT (shared) address", (_N("100.64.0.0/10"),)),
    (
        "reserved",
        "a reserved address",
        (
            _N("240.0.0.0/4"),  # the broadcast address 255.255.255.255 included
            _N("192.0.0.0/24"),
            _N("192.0.2.0/24"),
            _N("192.88.99.0/24"),
            _N("198.18.0.0/15"),
            _N("198.51.100.0/24"),
            _N("203.0.113.0/24"),
            _N("::/96"),  # IPv4-compatible, deprecated
            _N("100::/64"),
            _N("64:ff9b:1::/48"),
            _N("2001:2::/48"),
            _N("2001:10::/28"),
            _N("2001:db8::/32"),
            _N("3fff::/20"),
            _N("fec0::/10"),
        ),
    ),
)
_MAPPED = _N("::ffff:0:0/96")
_NAT64 = _N("64:ff9b::/96")
_SIXTOFOUR = _N("2002::/16")
_TEREDO = _N("2001::/32")

_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")
_NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")
_ENCODED_CONTROL = re.compile(r"%(0[0-9a-f]|1[0-9a-f]|7f|20)", re.IGNORECASE)


class Refused(ValueError):
    """A URL or an address a webhook may not go to; the message says why in plain words."""


@dataclass(frozen=True)
class Target:
    """A webhook URL taken apart: what to connect to and what to ask for."""

    scheme: str
    host: str  # ASCII, lower case, no brackets, no trailing dot
    port: int
    path: str  # path and query, as written ("/" when empty)
    #: the `Host` header: the host (bracketed if IPv6) and the port unless it is the default
    host_header: str
    literal: Address | None  # the host, when it is an address


def not_http(url: str) -> Refused:
    return Refused(f"{url[:100]!r} is not an http(s) URL.")


def parse(url: str) -> Target:
    """The URL's parts, or Refused saying what about it is not allowed (before any address)."""
    for ch in url:
        if ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F or ch in "\u0085\u2028\u2029":
            name = (
                "a line break"
                if ch in "\r\n\u0085\u2028\u2029"
                else ("a space" if ch == " " else "whitespace or a control character")
            )
            raise Refused(f"The URL holds {name} ({ch!r}); a webhook URL holds none.")
    if _ENCODED_CONTROL.search(url):
        found = _ENCODED_CONTROL.search(url).group(0)
        raise Refused(
            f"The URL holds {found}, an encoded space, line break or control character; "
            "a webhook URL holds none."
        )
    if "\\" in url:
        raise Refused("The URL holds a backslash; write its path with / only.")
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        raise not_http(url) from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES or not parts.netloc:
        raise not_http(url)
    if "@" in parts.netloc:
        raise Refused(
            "The URL holds a user name or password (before @); a webhook URL may not — the "
            "receiver checks the signature instead."
        )
    if port == 0:
        raise Refused("The URL's port is 0; a webhook goes to a port from 1 to 65535.")
    raw_host = parts.hostname or ""
    if not raw_host:
        raise not_http(url)
    if "%" in raw_host:
        raise Refused("The URL's address holds a zone index (%…); a webhook URL holds none.")
    bracketed = parts.netloc.rsplit("@", 1)[-1].startswith("[")
    literal: Address | None = None
    if bracketed:
        try:
            literal = ipaddress.IPv6Address(raw_host)
        except ValueError:
            raise not_http(url) from None
        host = str(literal)
    else:
        host = _name_or_ipv4(raw_host.rstrip("."), url)
        try:
            literal = ipaddress.IPv4Address(host)
        except ValueError:
            literal = None
    default = SCHEMES[scheme]
    shown = f"[{host}]" if bracketed else host
    header = shown if port in (None, default) else f"{shown}:{port}"
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Target(scheme, host, port or default, path, header, literal)


def _name_or_ipv4(host: str, url: str) -> str:
    """A host name in ASCII, or a dotted-quad IPv4 address; Refused for anything else,
    naming the address an unusual IPv4 form means."""
    if not host:
        raise not_http(url)
    labels = host.split(".")
    if _NUMERIC_LABEL.match(labels[-1]):  # a number last: an IPv4 address, as resolvers read it
        try:
            meant = ipaddress.IPv4Address(socket.inet_aton(host))
        except (OSError, ValueError):
            raise Refused(f"{host[:60]!r} is not an IPv4 address.") from None
        if str(meant) != host:
            raise Refused(
                f"{host[:60]!r} is the IPv4 address {meant} written in an unusual form; "
                f"write it as {meant}."
            )
        return host
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise Refused(f"{host[:60]!r} is not a host name.") from None
    host = host.lower()
    if len(host) > 253 or not all(_LABEL.match(label) for label in host.split(".")):
        raise Refused(f"{host[:60]!r} is not a host name.")
    return host


def kind_of(address: Address) -> tuple[str, str] | None:
    """(kind, words) of an address a webhook may not go to by default, or None for a public
    one. An IPv6 address that carries an IPv4 one is judged by the IPv4 address too."""
    if address in METADATA_ADDRESSES:
        return "metadata", "a cloud metadata address"
    if address.version == 6:
        embedded = _embedded(address)
        for inner in embedded:
            found = kind_of(inner)
            if found:
                kind, words = found
                return kind, f"an IPv6 form of {inner}, {words}"
        if address in _MAPPED:  # ::ffff:a.b.c.d with a public a.b.c.d is that address
            return None
    for kind, words, networks in RANGES:
        if any(address in network for network in networks):
            return kind, words
    if not address.is_global and not (address.version == 6 and _embedded(address)):
        return "reserved", "a reserved address"
    return None


def _embedded(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address stands for: mapped, NAT64, 6to4, Teredo."""
    packed = int(address)
    if address in _MAPPED or address in _NAT64:
        return [ipaddress.IPv4Address(packed & 0xFFFFFFFF)]
    if address in _SIXTOFOUR:
        return [address.sixtofour]
    if address in _TEREDO:
        server, client = address.teredo
        return [server, client]
    return []


def rule(kind: str) -> str:
    """Why an address of `kind` is refused, as the end of a refusal."""
    if kind in ALLOWABLE:
        return f"webhooks reach only public addresses unless {ALLOW_PRIVATE_VARIABLE}=1"
    if kind == "metadata":
        return f"webhooks never reach it, whatever {ALLOW_PRIVATE_VARIABLE} says"
    return (
        "webhooks never reach link-local, multicast, unspecified or reserved addresses, "
        f"whatever {ALLOW_PRIVATE_VARIABLE} says"
    )


def refusal(address: Address, *, allow_private: bool) -> tuple[str, str] | None:
    """(words, rule) when a webhook may not go to `address`, else None."""
    found = kind_of(address)
    if found is None:
        return None
    kind, words = found
    if kind in ALLOWABLE and allow_private:
        return None
    return words, rule(kind)


def check_name(target: Target, *, allow_private: bool) -> None:
    """Refused for a host name that is loopback or a metadata service by name."""
    host = target.host
    if host in METADATA_NAMES:
        raise Refused(f"{host} is a cloud metadata service; {rule('metadata')}.")
    if (host in LOOPBACK_NAMES or host.endswith(".localhost")) and not allow_private:
        raise Refused(f"{host} is this machine (loopback); {rule('loopback')}.")


def check_addresses(target: Target, addresses: Iterable[Address], *, allow_private: bool) -> None:
    """Refused, naming the first address not allowed, unless every one of them is."""
    for address in addresses:
        found = refusal(address, allow_private=allow_private)
        if found:
            words, why = found
            if target.literal is not None:
                raise Refused(f"{target.literal} is {words}; {why}.")
            raise Refused(f"{target.host} resolves to {address}, {words}; {why}.")


class Unresolved(Exception):
    """A name with no address (now), or one whose resolution took longer than allowed."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


#: how names are resolved: socket.getaddrinfo's signature; tests point it at their own table
getaddrinfo: Callable[..., list] = socket.getaddrinfo


def resolve(target: Target, timeout: float) -> list[Address]:
    """Every address the target's host stands for (itself when it is one), within `timeout`
    seconds; Unresolved when there is none or it takes longer. The lookup runs on its own
    thread, so a slow resolver holds that thread, not the caller."""
    if target.literal is not None:
        return [target.literal]
    box: dict[str, object] = {}
    done = threading.Event()
    lookup = getaddrinfo

    def run() -> None:
        try:
            box["infos"] = lookup(target.host, target.port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="webhook-resolve", daemon=True).start()
    if not done.wait(max(0.0, timeout)):
        raise Unresolved(f"{target.host} did not resolve within {timeout:g} s", timed_out=True)
    if "error" in box:
        raise Unresolved(f"{target.host} does not resolve")
    found: list[Address] = []
    for info in box["infos"]:  # type: ignore[union-attr]
        text = str(info[4][0]).split("%", 1)[0]
        try:
            address = ipaddress.ip_address(text)
        except ValueError:
            continue
        if address not in found:
            found.append(address)
    if not found:
        raise Unresolved(f"{target.host} does not resolve")
    return found

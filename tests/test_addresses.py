"""Where a webhook may go (`questions.addresses`, pure): the URLs refused before any address, a
table of addresses with what each is called and whether DECISIONS__WEBHOOK_ALLOW_PRIVATE lets
it through, the IPv4 address inside IPv6 forms, and properties over every address."""

from __future__ import annotations

import ipaddress
import re
import socket

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from questions.core import addresses
from tests.providers import resolving

PUBLIC_RULE = "webhooks reach only public addresses unless DECISIONS__WEBHOOK_ALLOW_PRIVATE=1"
NEVER = "whatever DECISIONS__WEBHOOK_ALLOW_PRIVATE says"


def refused(url: str, *, allow_private: bool = False, resolved=None) -> str | None:
    """The refusal a URL gets (its literal address, or the addresses given), or None."""
    try:
        target = addresses.parse(url)
        addresses.check_name(target, allow_private=allow_private)
        found = (
            [target.literal]
            if target.literal
            else [ipaddress.ip_address(a) for a in resolved or []]
        )
        addresses.check_addresses(target, found, allow_private=allow_private)
    except addresses.Refused as exc:
        return str(exc)
    return None


# --- the URL itself ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("ftp://example.com/x", "is not an http(s) URL"),
        ("file:///etc/passwd", "is not an http(s) URL"),
        ("gopher://example.com/", "is not an http(s) URL"),
        ("javascript:alert(1)", "is not an http(s) URL"),
        ("not a url", "a space"),
        ("http:///path", "is not an http(s) URL"),
        ("http://example.com:99999/", "is not an http(s) URL"),
        ("http://example.com:0/", "port is 0"),
        ("http://user:pass@example.com/", "user name or password"),
        ("http://user@example.com/", "user name or password"),
        ("http://example.com/\r\nX-Injected: 1", "a line break"),
        ("http://example.com/\nx", "a line break"),
        ("http://example.com/a b", "a space"),
        ("http://example.com/\tx", "whitespace or a control character"),
        ("http://example.com/\x7f", "whitespace or a control character"),
        ("http://example.com/\u2028", "a line break"),
        ("http://127.0.0.1:8124/%0d%0aX-Injected:1", "%0d"),
        ("http://example.com/%0A", "%0A"),
        ("http://example.com/%00", "%00"),
        ("http://example.com/%20", "%20"),
        ("http://example.com\\@127.0.0.1/", "backslash"),
        ("http://[fe80::1%25eth0]/", "zone index"),
        ("http://[not-v6]/", "is not an http(s) URL"),
        ("http://exa_mple-.com/", "is not a host name"),
        ("http://" + "a" * 64 + ".com/", "is not a host name"),
        ("http://999.1.1.1/", "is not an IPv4 address"),
        ("http://1.2.3.4.5/", "is not an IPv4 address"),
    ],
)
def test_a_url_that_could_change_what_is_asked_of_whom_is_refused(url, words):
    message = refused(url, allow_private=True)
    assert message is not None and words in message


@pytest.mark.parametrize(
    ("url", "means"),
    [
        ("http://127.1/", "127.0.0.1"),
        ("http://2130706433/", "127.0.0.1"),
        ("http://0x7f000001/", "127.0.0.1"),
        ("http://0177.0.0.1/", "127.0.0.1"),
        ("http://0x7f.1/", "127.0.0.1"),
        ("http://10.1/", "10.0.0.1"),
        ("http://134744072/", "8.8.8.8"),  # even a public one: write it plainly
    ],
)
def test_an_ipv4_address_in_an_unusual_form_is_refused_naming_the_address(url, means):
    message = refused(url, allow_private=True)
    assert message is not None
    assert f"the IPv4 address {means} written in an unusual form; write it as {means}" in message


def test_a_url_taken_apart():
    t = addresses.parse("HTTPS://Hooks.Example.COM./a/b?x=1#frag")
    assert (t.scheme, t.host, t.port, t.path, t.host_header, t.literal) == (
        "https",
        "hooks.example.com",
        443,
        "/a/b?x=1",
        "hooks.example.com",
        None,
    )
    t = addresses.parse("http://[2001:4860::8888]:8080")
    assert (t.host, t.port, t.path, t.host_header) == (
        "2001:4860::8888",
        8080,
        "/",
        "[2001:4860::8888]:8080",
    )
    assert t.literal == ipaddress.ip_address("2001:4860::8888")
    assert addresses.parse("http://bücher.example/").host == "xn--bcher-kva.example"
    assert addresses.parse("http://runtime_1:8080/h").host == "runtime_1"  # a compose service


# --- the address table ---------------------------------------------------------------------------

ALLOWABLE, ALWAYS = True, False
TABLE = [
    # (address, what it is called, ALLOW_PRIVATE lets it through)
    ("127.0.0.1", "a loopback address", ALLOWABLE),
    ("127.255.255.254", "a loopback address", ALLOWABLE),
    ("::1", "a loopback address", ALLOWABLE),
    ("10.0.0.1", "a private address", ALLOWABLE),
    ("172.16.0.1", "a private address", ALLOWABLE),
    ("172.31.255.255", "a private address", ALLOWABLE),
    ("192.168.1.1", "a private address", ALLOWABLE),
    ("fc00::1", "a private address", ALLOWABLE),
    ("fd12:3456::1", "a private address", ALLOWABLE),
    ("100.64.0.1", "a carrier-grade NAT (shared) address", ALLOWABLE),
    ("169.254.169.254", "a cloud metadata address", ALWAYS),
    ("169.254.170.2", "a cloud metadata address", ALWAYS),
    ("fd00:ec2::254", "a cloud metadata address", ALWAYS),
    ("100.100.100.200", "a cloud metadata address", ALWAYS),
    ("169.254.1.1", "a link-local address", ALWAYS),
    ("fe80::1", "a link-local address", ALWAYS),
    ("0.0.0.0", "an unspecified address", ALWAYS),
    ("0.1.2.3", "an unspecified address", ALWAYS),
    ("::", "an unspecified address", ALWAYS),
    ("224.0.0.1", "a multicast address", ALWAYS),
    ("239.255.255.250", "a multicast address", ALWAYS),
    ("ff02::1", "a multicast address", ALWAYS),
    ("255.255.255.255", "a reserved address", ALWAYS),
    ("240.0.0.1", "a reserved address", ALWAYS),
    ("192.0.2.1", "a reserved address", ALWAYS),
    ("198.51.100.7", "a reserved address", ALWAYS),
    ("203.0.113.9", "a reserved address", ALWAYS),
    ("198.18.0.1", "a reserved address", ALWAYS),
    ("192.0.0.8", "a reserved address", ALWAYS),
    ("2001:db8::1", "a reserved address", ALWAYS),
    ("fec0::1", "a reserved address", ALWAYS),
    ("100::1", "a reserved address", ALWAYS),
    ("::7f00:1", "a reserved address", ALWAYS),  # IPv4-compatible, deprecated
    ("64:ff9b:1::a00:1", "a reserved address", ALWAYS),  # local-use NAT64
    # IPv6 forms of an IPv4 address are judged by it
    ("::ffff:127.0.0.1", "an IPv6 form of 127.0.0.1, a loopback address", ALLOWABLE),
    ("::ffff:10.0.0.1", "an IPv6 form of 10.0.0.1, a private address", ALLOWABLE),
    ("::ffff:169.254.169.254", "an IPv6 form of 169.254.169.254, a cloud metadata address", ALWAYS),
    ("64:ff9b::10.0.0.1", "an IPv6 form of 10.0.0.1, a private address", ALLOWABLE),
    ("64:ff9b::127.0.0.1", "an IPv6 form of 127.0.0.1, a loopback address", ALLOWABLE),
    (
        "64:ff9b::169.254.169.254",
        "an IPv6 form of 169.254.169.254, a cloud metadata address",
        ALWAYS,
    ),
    ("2002:a00:1::", "an IPv6 form of 10.0.0.1, a private address", ALLOWABLE),
    ("2002:7f00:1::1", "an IPv6 form of 127.0.0.1, a loopback address", ALLOWABLE),
    ("2002:a9fe:a9fe::", "an IPv6 form of 169.254.169.254, a cloud metadata address", ALWAYS),
    # Teredo: server 65.54.227.120, client 192.0.2.45 (obfuscated)
    (
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",
        "an IPv6 form of 192.0.2.45, a reserved address",
        ALWAYS,
    ),
]
PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "172.32.0.1",  # just past 172.16.0.0/12
    "100.128.0.1",  # just past 100.64.0.0/10
    "169.253.255.255",
    "2001:4860:4860::8888",
    "2606:4700:4700::1111",
    "::ffff:8.8.8.8",
    "64:ff9b::8.8.8.8",
    "2002:808:808::1",
]


@pytest.mark.parametrize(("address", "words", "allowable"), TABLE)
def test_each_refused_address_is_named_with_its_rule(address, words, allowable):
    ip = ipaddress.ip_address(address)
    found = addresses.refusal(ip, allow_private=False)
    assert found is not None
    called, why = found
    assert called == words
    assert why == (PUBLIC_RULE if allowable else why) and (allowable or NEVER in why)
    with_private = addresses.refusal(ip, allow_private=True)
    assert (with_private is None) == allowable


@pytest.mark.parametrize("address", PUBLIC)
def test_a_public_address_passes(address):
    ip = ipaddress.ip_address(address)
    assert addresses.refusal(ip, allow_private=False) is None
    assert addresses.refusal(ip, allow_private=True) is None


def test_refusals_say_what_is_wrong_in_plain_words():
    assert refused("http://10.0.0.1/") == f"10.0.0.1 is a private address; {PUBLIC_RULE}."
    assert refused("https://hooks.example/", resolved=["8.8.8.8", "10.0.0.1"]) == (
        f"hooks.example resolves to 10.0.0.1, a private address; {PUBLIC_RULE}."
    )
    assert refused("http://169.254.169.254/latest/meta-data/", allow_private=True) == (
        f"169.254.169.254 is a cloud metadata address; webhooks never reach it, {NEVER}."
    )
    assert refused("http://[::ffff:7f00:1]:8124/") == (
        f"::ffff:7f00:1 is an IPv6 form of 127.0.0.1, a loopback address; {PUBLIC_RULE}."
    )
    assert refused("http://0.0.0.0:8124/", allow_private=True) == (
        "0.0.0.0 is an unspecified address; webhooks never reach link-local, multicast, "
        f"unspecified or reserved addresses, {NEVER}."
    )


@pytest.mark.parametrize(
    "host",
    [
        "metadata.google.internal",
        "METADATA.google.internal.",
        "metadata.goog",
        "metadata",
        "instance-data",
    ],
)
def test_a_metadata_name_is_refused_whatever_allow_private_says(host):
    for allow in (False, True):
        message = refused(f"http://{host}/computeMetadata/v1/", allow_private=allow)
        assert message is not None and "a cloud metadata service" in message and NEVER in message


@pytest.mark.parametrize(
    "host", ["localhost", "LOCALHOST.", "api.localhost", "localhost.localdomain"]
)
def test_localhost_is_loopback_by_name(host):
    assert refused(f"http://{host}:8122/") == (
        f"{host.lower().rstrip('.')} is this machine (loopback); {PUBLIC_RULE}."
    )
    assert refused(f"http://{host}:8122/", allow_private=True, resolved=["127.0.0.1"]) is None


def test_every_address_a_name_resolves_to_is_checked():
    url = "https://hooks.example/h"
    assert refused(url, resolved=["8.8.8.8", "1.1.1.1"]) is None
    assert "resolves to 127.0.0.1" in refused(url, resolved=["8.8.8.8", "127.0.0.1"])
    assert "resolves to ::1" in refused(url, resolved=["::1", "8.8.8.8"])
    assert "resolves to 169.254.169.254" in refused(
        url, allow_private=True, resolved=["10.0.0.1", "169.254.169.254"]
    )


def test_resolve_answers_every_address_once_and_says_when_there_is_none():
    target = addresses.parse("https://hooks.example/h")
    with resolving({"hooks.example": ["8.8.8.8", "2001:4860:4860::8888", "8.8.8.8"]}) as calls:
        assert addresses.resolve(target, 5) == [
            ipaddress.ip_address("8.8.8.8"),
            ipaddress.ip_address("2001:4860:4860::8888"),
        ]
        with pytest.raises(addresses.Unresolved, match="does not resolve"):
            addresses.resolve(addresses.parse("https://nowhere.example/"), 5)
    assert calls == ["hooks.example", "nowhere.example"]
    literal = addresses.parse("http://8.8.8.8/")
    assert addresses.resolve(literal, 5) == [ipaddress.ip_address("8.8.8.8")]  # no lookup


def test_a_resolver_that_hangs_is_waited_for_only_as_long_as_allowed():
    import threading

    release = threading.Event()

    def hangs(*args, **kwargs):
        release.wait(30)
        raise socket.gaierror("late")

    kept, addresses.getaddrinfo = addresses.getaddrinfo, hangs
    try:
        with pytest.raises(addresses.Unresolved) as caught:
            addresses.resolve(addresses.parse("https://slow.example/"), 0.05)
    finally:
        release.set()
        addresses.getaddrinfo = kept
    assert caught.value.timed_out and "did not resolve within 0.05 s" in str(caught.value)


# --- properties ----------------------------------------------------------------------------------

NETWORKS_REFUSED = [
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "::1/128",
        "::/128",
        "fc00::/7",
        "fe80::/10",
        "ff00::/8",
    )
]


def _in(network):
    return st.integers(0, network.num_addresses - 1).map(lambda i: network[i])


refused_v4 = st.one_of(*[_in(n) for n in NETWORKS_REFUSED if n.version == 4])
refused_any = st.one_of(*[_in(n) for n in NETWORKS_REFUSED])


@settings(deadline=None, max_examples=300)
@given(refused_any)
def test_every_address_of_a_refused_range_is_refused(ip):
    assert addresses.refusal(ip, allow_private=False) is not None


@settings(deadline=None, max_examples=300)
@given(refused_v4, st.sampled_from(["mapped", "nat64", "6to4"]))
def test_an_ipv6_form_of_a_refused_ipv4_address_is_refused_the_same_way(ip, form):
    v6 = ipaddress.IPv6Address(
        {
            "mapped": (0xFFFF << 32) | int(ip),
            "nat64": (0x64FF9B << 96) | int(ip),
            "6to4": (0x2002 << 112) | (int(ip) << 80),
        }[form]
    )
    for allow in (False, True):
        plain, wrapped = (
            addresses.refusal(ip, allow_private=allow),
            addresses.refusal(v6, allow_private=allow),
        )
        assert (plain is None) == (wrapped is None)
        if plain:
            assert wrapped[0] == f"an IPv6 form of {ip}, {plain[0]}"


@settings(deadline=None, max_examples=300)
@given(st.integers(0, 2**32 - 1) | st.integers(0, 2**128 - 1).map(ipaddress.IPv6Address))
def test_allow_private_only_ever_lets_more_through_and_never_the_metadata_addresses(raw):
    ip = ipaddress.IPv4Address(raw) if isinstance(raw, int) else raw
    strict = addresses.refusal(ip, allow_private=False)
    loose = addresses.refusal(ip, allow_private=True)
    if strict is None:
        assert loose is None
    if ip in addresses.METADATA_ADDRESSES or ip.is_link_local or ip.is_multicast:
        assert loose is not None
    if loose is None and strict is not None:  # what ALLOW_PRIVATE lets through
        assert addresses.kind_of(ip)[0] in ("loopback", "private")


@settings(deadline=None, max_examples=300)
@given(st.integers(0, 2**32 - 1))
def test_an_ipv4_address_is_taken_only_in_its_dotted_form(n):
    ip = ipaddress.IPv4Address(n)
    for written in (str(n), hex(n), f"0{oct(n)[2:]}"):
        if written != str(ip):
            message = refused(f"http://{written}/", allow_private=True)
            assert message is not None and re.search(
                rf"write it as {re.escape(str(ip))}\b", message
            )
    assert addresses.parse(f"http://{ip}/").literal == ip


@settings(deadline=None, max_examples=300)
@given(st.text(min_size=1, max_size=30))
def test_parse_either_takes_a_url_apart_or_refuses_it(tail):
    try:
        target = addresses.parse(f"https://hooks.example/{tail}")
    except addresses.Refused as exc:
        assert str(exc)
    else:
        assert target.host == "hooks.example"
        assert not any(ch.isspace() or ord(ch) < 0x20 or ch == "\x7f" for ch in target.path)
        assert not re.search(r"%(0[0-9a-f]|1[0-9a-f]|7f)", target.path, re.IGNORECASE)

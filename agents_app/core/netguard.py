"""The outbound-address guard: AgentDesk fetches (`http_get`) and posts (webhooks) only to
public internet addresses unless told otherwise. Every address a host resolves to must pass,
or which one the connection happens to use would decide whether the guard holds."""

import ipaddress
import socket
from collections.abc import Iterable

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class UnresolvableHost(Exception):
    """The host has no address (its message says which host and why)."""


class PrivateAddress(Exception):
    """The host resolves to an address that is not public; `refused` lists them."""

    def __init__(self, refused: list[IPAddress]):
        super().__init__(", ".join(map(str, refused)))
        self.refused = refused


# IPv6 prefixes that carry an IPv4 address in their low 32 bits: a host answering with one of
# these reaches that IPv4 address (through a NAT64 or SIIT gateway, or a stack that still
# speaks the deprecated IPv4-compatible form), so the IPv4 address is what must be public.
# (IPv4-mapped ::ffff:0:0/96 and 6to4 2002::/16 are read by the ipaddress module itself.)
CARRY_IPV4_LOW_BITS = (
    ipaddress.IPv6Network("::/96"),  # IPv4-compatible, ::a.b.c.d
    ipaddress.IPv6Network("::ffff:0:0:0/96"),  # IPv4-translated (SIIT)
    ipaddress.IPv6Network("64:ff9b::/96"),  # NAT64 well-known prefix
)
# Not globally routed at all, whatever they embed (RFC 8215 local-use NAT64; Teredo, whose
# client and server addresses sit in different fields). Python 3.11's is_global misses the
# first, so they are named here rather than left to it.
NEVER_PUBLIC = (ipaddress.IPv6Network("64:ff9b:1::/48"), ipaddress.IPv6Network("2001::/32"))


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv4-mapped, -compatible or -translated, NAT64 or 6to4 address stands
    for; None for any other IPv6 address."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if any(address in network for network in CARRY_IPV4_LOW_BITS):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_public(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        if any(address in network for network in NEVER_PUBLIC):
            return False
        if (embedded := embedded_ipv4(address)) is not None:
            address = embedded
    # is_global is False for loopback, private, link-local, CGNAT, reserved and unspecified.
    return address.is_global and not address.is_multicast


def public_addresses(url: httpx.URL, allowed: Iterable[IPNetwork] = ()) -> list[IPAddress]:
    """Every address `url`'s host resolves to, each public or inside one of the `allowed`
    networks. Raises UnresolvableHost, or PrivateAddress naming the addresses refused."""
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(url.raw_host.decode("ascii"), port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise UnresolvableHost(f"Could not resolve host '{url.host}': {exc}") from None
    addresses = list(dict.fromkeys(ipaddress.ip_address(info[4][0]) for info in infos))
    allowed = list(allowed)
    refused = [a for a in addresses if not is_public(a) and not any(a in n for n in allowed)]
    if refused or not addresses:
        raise PrivateAddress(refused)
    return addresses

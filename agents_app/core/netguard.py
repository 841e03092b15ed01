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


def is_public(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
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

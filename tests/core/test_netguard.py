"""The outbound-address guard's verdicts on single addresses (the tools and webhooks that use
it are tested with real requests in tests/tools/builtin and tests/webhooks)."""

import ipaddress

import pytest

from agents_app.core.netguard import is_public
from tests.support.addresses import DISGUISED_PRIVATE_HOSTS, PLAIN_PRIVATE_HOSTS


@pytest.mark.parametrize("host", DISGUISED_PRIVATE_HOSTS + PLAIN_PRIVATE_HOSTS)
def test_a_private_address_in_any_ipv6_form_is_not_public(host):
    assert not is_public(ipaddress.ip_address(host.strip("[]")))


@pytest.mark.parametrize(
    "address",
    ["8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"],
)
def test_a_public_address_stays_public_in_every_form(address):
    assert is_public(ipaddress.ip_address(address))

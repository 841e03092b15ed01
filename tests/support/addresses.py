"""IPv6 spellings of private IPv4 addresses, for the outbound-address guard's tests (http_get
and webhooks share the guard, so they share the list)."""

# Each reaches a loopback, link-local (cloud metadata) or private IPv4 address through a
# translation or tunnel form; a guard that looks at the IPv6 address alone lets them through.
DISGUISED_PRIVATE_HOSTS = [
    "[::127.0.0.1]",  # IPv4-compatible loopback
    "[::169.254.169.254]",  # IPv4-compatible link-local
    "[::ffff:0:7f00:1]",  # IPv4-translated (SIIT) loopback
    "[64:ff9b::7f00:1]",  # NAT64 well-known prefix, loopback
    "[64:ff9b::a9fe:a9fe]",  # NAT64 well-known prefix, link-local
    "[64:ff9b::a00:1]",  # NAT64 well-known prefix, 10.0.0.1
    "[64:ff9b:1::a9fe:a9fe]",  # NAT64 local-use prefix
    "[2002:a9fe:a9fe::1]",  # 6to4 of link-local
    "[2002:7f00:1::1]",  # 6to4 of loopback
    "[2002:c0a8:101::1]",  # 6to4 of 192.168.1.1
]

# Forms that the guard refused before it learnt the ones above (the ipaddress module reads
# them itself); kept beside them so a rewrite of the guard cannot lose them.
PLAIN_PRIVATE_HOSTS = [
    "[::ffff:169.254.169.254]",  # IPv4-mapped link-local
    "[::ffff:10.0.0.1]",  # IPv4-mapped private
    "[2001:0:4136:e378:8000:63bf:3fff:fdd2]",  # Teredo
]

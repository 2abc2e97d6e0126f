"""What may leave this process on a model call: which environment variables may be sent as
an API key, and which addresses a request may be sent to.

Both rules are checked twice: when an admin saves an endpoint (llm.services, so the mistake
is refused where it is made) and on every call (llm.client for the key, llm.http for the
address, where the socket is opened), because an endpoint saved before a rule existed, or
under a deployment that allowed more, must not be used to get around it.

Plain Python, no Django: the callers pass the deployment's settings in.
"""

import ipaddress
import socket
from fnmatch import fnmatchcase

# --- Key variables ---------------------------------------------------------------------------

# Any variable whose name starts with this may hold a model key: the operator chose the name
# for that purpose (TASKWRIGHT_MODEL_KEY_OPENAI=sk-…).
KEY_VARIABLE_PREFIX = "TASKWRIGHT_MODEL_KEY_"
# Never sent as a key, whatever MODEL_KEY_VARIABLES lists: the deployment's own secrets and
# the variables every process has. A name is refused when it equals one of these or matches
# one of the patterns (fnmatch, case-sensitive like the environment).
DENIED_KEY_VARIABLES = frozenset({"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CACHE_URL",
                                  "LLM_SLOTS_REDIS_URL", "STORAGE_OPTIONS", "PATH", "HOME", "USER", "PWD", "SHELL"})
DENIED_KEY_PATTERNS = ("*PASSWORD*", "*PASSWD*", "*SECRET_KEY*", "*SECRET_ACCESS_KEY*", "*_URL")


def key_variable_denied(name: str) -> bool:
    return name in DENIED_KEY_VARIABLES or any(fnmatchcase(name, pattern) for pattern in DENIED_KEY_PATTERNS)


def key_variable_allowed(name: str, *, listed: list[str] | tuple[str, ...]) -> bool:
    """Whether `name` may serve as an endpoint's key variable. Decided by the name alone,
    never by whether the variable is set, so a refusal says nothing about the environment."""
    if not name or key_variable_denied(name):
        return False
    return name.startswith(KEY_VARIABLE_PREFIX) or name in listed


def key_variable_rule(*, listed: list[str] | tuple[str, ...]) -> str:
    """The allowed names, in words an admin can act on (the same text whatever was asked)."""
    usable = [name for name in listed if not key_variable_denied(name)]
    names = ", ".join(usable) if usable else "none"
    return (
        f"Allowed: a name starting with {KEY_VARIABLE_PREFIX} (e.g. {KEY_VARIABLE_PREFIX}OPENAI), or one listed in the "
        f"server's MODEL_KEY_VARIABLES setting (now: {names}). A site operator can list provider names there, e.g. "
        "MODEL_KEY_VARIABLES=OPENAI_API_KEY,ANTHROPIC_API_KEY, and restart the web server and workers. "
        "The deployment's own secrets (SECRET_KEY, DATABASE_URL, PATH …) are never allowed."
    )


# --- Addresses -------------------------------------------------------------------------------

# Cloud metadata services. Each is also caught by the properties below (link-local, shared,
# unique-local); named here so that stays true whatever Python's tables say.
METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254",
))
NAT64 = ipaddress.ip_network("64:ff9b::/96")


class BlockedAddress(Exception):
    """The host resolves to an address this deployment does not reach (not public)."""


def address_is_public(address: str) -> bool:
    """Whether a resolved address (as getaddrinfo gives it) is a public unicast one.
    IPv6 forms that carry an IPv4 address (mapped ::ffff:a.b.c.d, NAT64, 6to4, Teredo)
    are judged by that address too."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # an IPv6 scope ("fe80::1%eth0") says which link, not where
    candidates = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            candidates.append(ip.ipv4_mapped)
        if ip in NAT64:
            candidates.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
        if ip.sixtofour is not None:
            candidates.append(ip.sixtofour)
        if ip.teredo is not None:
            candidates.extend(ip.teredo)
    return not any(
        c in METADATA_ADDRESSES or not c.is_global or c.is_private or c.is_loopback or c.is_link_local
        or c.is_unspecified or c.is_multicast or c.is_reserved
        for c in candidates
    )


def resolve(host: str, port: int, *, allow_private: bool) -> list[tuple]:
    """Resolve `host` once and return getaddrinfo's entries, to connect to exactly these:
    the address checked is the address used, so a name that resolves differently a moment
    later (DNS rebinding) gains nothing. Without `allow_private`, a host with any address
    that is not public is refused whole (BlockedAddress). getaddrinfo also reads the numeric
    forms (0x7f000001, 2130706433, 0177.0.0.1, 127.1) as the address they mean, so they are
    judged by that. Resolution failures are socket.gaierror (an OSError)."""
    entries = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    if not allow_private and not all(address_is_public(entry[4][0]) for entry in entries):
        raise BlockedAddress(host)
    return entries


def host_is_public(host: str, port: int) -> bool:
    """For a check at save time: whether the host resolves, every address public. A host
    that does not resolve is not public either (one answer for both, so the check tells
    nothing about which internal names exist)."""
    try:
        resolve(host, port, allow_private=False)
    except (BlockedAddress, OSError, UnicodeError, ValueError):
        return False
    return True

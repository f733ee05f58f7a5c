"""What a broker says about its own settings: DescribeConfigs on the BROKER resource (KIP-133).

Used once per run to learn the group coordinator settings of a target the suite did not start
(`conformance/targets/settings.py`). The broker is named by its node id, found with Metadata v1
(the broker whose address is the one we reached, else the only one). Only the asked keys are read
from the answer; each value is a bounded string (hostile input: a broker may answer anything).
"""

from __future__ import annotations

from typing import Any

from kio.static.constants import EntityType
from kio.static.primitive import i8

from conformance.wire.requests import (
    WireGarbage,
    _module,
    _payload_class,
    decode,
    error_name,
    exchange,
    metadata,
)

API_DESCRIBE_CONFIGS = 32
#: ConfigResource.Type.BROKER (clients/.../common/config/ConfigResource.java)
RESOURCE_BROKER = 4
#: a setting value longer than this is not a group setting: garbage
MAX_VALUE_CHARS = 256


def broker_node_id(host: str, port: int, timeout: float) -> int:
    """The node id of the broker at ``host:port`` (Metadata v1 lists every broker with its address)."""
    resp = metadata(host, port, None, timeout, version=1)
    brokers = list(resp.brokers)[:1000]
    for b in brokers:
        if str(b.host) == host and int(b.port) == port:
            return int(b.node_id)
    if len(brokers) == 1:
        return int(brokers[0].node_id)
    raise WireGarbage(f"Metadata lists {len(brokers)} brokers, none at {host}:{port}")


def describe_broker_configs(
    host: str, port: int, keys: list[str], timeout: float, version: int
) -> dict[str, str | None]:
    """The broker's value of each of ``keys`` it reports (None: reported without a value)."""
    node = broker_node_id(host, port, timeout)
    req_mod = _module(API_DESCRIBE_CONFIGS, version, EntityType.request)
    req_cls = _payload_class(req_mod, "Request")
    resource = req_mod.DescribeConfigsResource(
        resource_type=i8(RESOURCE_BROKER), resource_name=str(node), configuration_keys=tuple(keys)
    )
    kwargs: dict[str, Any] = {"resources": (resource,)}
    if version >= 1:
        kwargs["include_synonyms"] = False
    if version >= 3:
        kwargs["include_documentation"] = False
    frame = exchange(host, port, req_cls(**kwargs), timeout)
    resp = decode(
        _payload_class(_module(API_DESCRIBE_CONFIGS, version, EntityType.response), "Response"), frame
    )
    out: dict[str, str | None] = {}
    for result in list(resp.results)[:4]:
        code = int(result.error_code.value)
        if code != 0:
            raise WireGarbage(f"DescribeConfigs broker {node} answered {error_name(code)}")
        for entry in list(result.configs)[: len(keys) * 2]:
            name = str(entry.name)
            if name not in keys:
                continue
            value = entry.value
            if value is not None and len(str(value)) > MAX_VALUE_CHARS:
                raise WireGarbage(f"DescribeConfigs: value of {name} is {len(str(value))} characters long")
            out[name] = None if value is None else str(value)
    return out

"""What reaches what (issue 37): /health, /ready and /metrics only on the ops port behind
an internal Service no Ingress routes to; NetworkPolicies that let only the ingress
controller reach the API and keep every pod's egress to its region's data network; an
optional ServiceMonitor on the internal Service."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import pytest

from tests.charts.test_chart import CHART, VALUE_SETS, _parse, _values

Manifest = dict[str, Any]


def _render(values: dict[str, Any] | None, name: str = "tether") -> list[Manifest]:
    with helm.Chart.load(CHART) as chart:
        return _parse(chart.render(values, name=name, namespace="tether"))


@pytest.fixture(scope="module")
def renders() -> dict[str, list[Manifest]]:
    return {name: _render(_values(name), f"tether-{name}") for name in VALUE_SETS}


def _kind(manifests: list[Manifest], kind: str) -> list[Manifest]:
    return [m for m in manifests if m["kind"] == kind]


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_no_ingress_routes_to_the_ops_port_or_its_service(
    renders: dict[str, list[Manifest]], value_set: str
) -> None:
    manifests = renders[value_set]
    services = {s["metadata"]["name"]: s for s in _kind(manifests, "Service")}
    internal = [s for s in services.values() if s["spec"]["ports"][0]["name"] == "ops"]
    (ops_service,) = internal
    assert ops_service["spec"]["type"] == "ClusterIP"
    for ingress in _kind(manifests, "Ingress"):
        for rule in ingress["spec"]["rules"]:
            for path in rule["http"]["paths"]:
                backend = path["backend"]["service"]
                assert backend["name"] != ops_service["metadata"]["name"]
                assert backend["port"] == {"name": "http"}
                assert services[backend["name"]]["spec"]["ports"] == [
                    {"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}
                ]


def test_region_policies_admit_only_the_ingress_controller_and_egress_in_region(
    renders: dict[str, list[Manifest]],
) -> None:
    for region, cidr in (("eu-west", "10.20.0.0/16"), ("cn-north", "10.40.0.0/16")):
        policies = {
            p["metadata"]["labels"]["app.kubernetes.io/component"]: p["spec"]
            for p in _kind(renders[region], "NetworkPolicy")
        }
        assert set(policies) == {"api", "background"}
        api = policies["api"]
        public = next(r for r in api["ingress"] if r["ports"][0]["port"] == "http")
        assert public["from"] == [
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}
        ]
        background = policies["background"]
        assert "ingress" not in background  # workers, beat and the Job take no traffic
        assert background["policyTypes"] == ["Ingress", "Egress"]
        assert background["podSelector"]["matchExpressions"][0]["values"] == ["api"]
        for spec in (api, background):
            destinations = [peer for rule in spec["egress"] for peer in rule.get("to", [])]
            assert destinations == [{"ipBlock": {"cidr": cidr}}]
    assert _kind(renders["default"], "NetworkPolicy") == []


def test_the_service_monitor_scrapes_the_internal_service() -> None:
    manifests = _render({"metrics": {"serviceMonitor": {"enabled": True, "labels": {"r": "p"}}}})
    (monitor,) = _kind(manifests, "ServiceMonitor")
    (endpoint,) = monitor["spec"]["endpoints"]
    assert (endpoint["port"], endpoint["path"]) == ("ops", "/metrics")
    selected = monitor["spec"]["selector"]["matchLabels"]
    (internal,) = [s for s in _kind(manifests, "Service") if s["spec"]["ports"][0]["name"] == "ops"]
    assert selected.items() <= internal["metadata"]["labels"].items()
    assert monitor["metadata"]["labels"]["r"] == "p"


@pytest.mark.parametrize(
    "values",
    [
        {
            "region": "eu-west",
            "otel": {"enabled": True, "endpoint": "http://otel.cn-north.ex:4318"},
        },
        {"region": "eu-west", "image": {"repository": "registry.cn-north.example.com/tether"}},
        {"region": "cn-north", "ingress": {"enabled": True, "hosts": [{"host": "t.eu-west.ex"}]}},
        {
            "region": "cn-north",
            "config": {"extraEnv": {"TETHER_LLM__BASE_URL": "https://llm.eu-west.example.com/v1"}},
        },
        {"region": "eu-west", "secrets": {"database": {"existingSecret": "tether-cn-north-pg"}}},
        {"region": "EU_West"},
        {"region": "eu-west", "config": {"maxUploadMegabytes": 0}},
        # The object store of uploaded files (decision 0083): its endpoint, region,
        # bucket and credentials' Secret stay in the release's region.
        {"region": "eu-west", "files": {"backend": "s3", "bucket": "b", "region": "cn-north-1"}},
        {
            "region": "cn-north",
            "files": {"backend": "s3", "bucket": "b", "endpoint": "https://s3.eu-west-1.x"},
        },
        {"region": "eu-west", "files": {"backend": "s3", "bucket": "tether-cn-north-files"}},
        {"region": "eu-west", "secrets": {"objectStore": {"existingSecret": "s3-cn-north"}}},
        {"region": "eu-west", "files": {"backend": "s3"}},
        {"region": "eu-west", "files": {"backend": "gcs", "bucket": "tether"}},
    ],
)
def test_the_values_schema_refuses_another_regions_endpoints_and_bad_values(
    values: dict[str, Any],
) -> None:
    """Data residency (issue 37): a region's release cannot name another region's
    collector, registry, host, provider or Secret."""
    with pytest.raises(helm.HelmValuesError, match="schema"):
        _render(values)

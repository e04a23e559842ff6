"""The chart's autoscalers: the API on CPU, workers on CPU and, when asked, on the depth
of each queue they take (an External metric served from ``tether_queue_depth``,
docs/deploy.md). Every render is also checked against values.schema.json (Helm refuses
values the schema rejects) and the Kubernetes 1.30 schemas."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest

from tests.charts.test_chart import CHART, KUBE_VERSION, WORKER_POOLS, _parse

Manifest = dict[str, Any]
DEPTH_ON = {"worker": {"autoscaling": {"queueDepth": {"enabled": True}}}}


@pytest.fixture(scope="module")
def chart() -> Iterator[helm.Chart]:
    with helm.Chart.load(CHART) as loaded:
        yield loaded


def _autoscalers(chart: helm.Chart, values: dict[str, Any] | None) -> dict[str, Manifest]:
    manifests = _parse(chart.render(values, name="tether", namespace="tether"))
    for manifest in manifests:
        kubernetes_validate.validate(manifest, KUBE_VERSION, strict=True)
    return {
        m["metadata"]["labels"]["app.kubernetes.io/component"]: m
        for m in manifests
        if m["kind"] == "HorizontalPodAutoscaler"
    }


def _queue_targets(hpa: Manifest) -> dict[str, str]:
    return {
        m["external"]["metric"]["selector"]["matchLabels"]["queue"]: m["external"]["target"][
            "averageValue"
        ]
        for m in hpa["spec"]["metrics"]
        if m["type"] == "External"
    }


def _cpu(hpa: Manifest) -> int:
    (cpu,) = [m for m in hpa["spec"]["metrics"] if m["type"] == "Resource"]
    assert cpu["resource"]["name"] == "cpu"
    return int(cpu["resource"]["target"]["averageUtilization"])


def test_by_default_the_api_and_the_workers_scale_on_cpu_only(chart: helm.Chart) -> None:
    scaled = _autoscalers(chart, None)
    assert set(scaled) == {"api", "worker"}
    assert (_cpu(scaled["api"]), _cpu(scaled["worker"])) == (70, 75)
    assert all(_queue_targets(hpa) == {} for hpa in scaled.values())


def test_queue_depth_scales_workers_on_each_queue_they_take_with_a_target(
    chart: helm.Chart,
) -> None:
    scaled = _autoscalers(chart, DEPTH_ON)
    assert _queue_targets(scaled["api"]) == {}  # the API scales on CPU alone
    worker = scaled["worker"]
    assert _cpu(worker) == 75  # and CPU still counts: the HPA takes the larger ask
    # The legacy `celery` queue has no target: it only drains a previous release's tasks.
    assert _queue_targets(worker) == {"turns": "500", "memories": "50", "knowledge": "2"}
    for metric in worker["spec"]["metrics"][1:]:
        assert metric["external"]["metric"]["name"] == "tether_queue_depth"
        assert metric["external"]["target"]["type"] == "AverageValue"


def test_each_autoscaled_pool_scales_on_its_own_queues(chart: helm.Chart) -> None:
    values = WORKER_POOLS | {
        "worker": WORKER_POOLS["worker"]
        | {"autoscaling": {"queueDepth": {"enabled": True, "selector": {"namespace": "t"}}}}
    }
    scaled = _autoscalers(chart, values)
    assert set(scaled) == {"api", "worker", "worker-memories"}  # knowledge: fixed replicas
    assert _queue_targets(scaled["worker"]) == {"turns": "500"}
    assert _queue_targets(scaled["worker-memories"]) == {"memories": "50"}
    (depth,) = [m for m in scaled["worker-memories"]["spec"]["metrics"] if m["type"] == "External"]
    labels = depth["external"]["metric"]["selector"]["matchLabels"]
    assert labels == {"queue": "memories", "namespace": "t"}


def test_queue_depth_renders_nothing_without_a_worker_autoscaler(chart: helm.Chart) -> None:
    values = {"worker": {"autoscaling": {"enabled": False, "queueDepth": {"enabled": True}}}}
    assert set(_autoscalers(chart, values)) == {"api"}


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"targets": {"turnz": 10}}, "turnz"),  # not a queue the worker knows
        ({"targets": {"turns": 0}}, "minimum"),
        ({"metricName": "tether queue depth"}, "metricName"),
        ({"selector": {"namespace": 3}}, "selector"),
        ({"enabld": True}, "enabld"),
    ],
)
def test_the_schema_refuses_a_queue_depth_it_cannot_render(
    chart: helm.Chart, values: dict[str, Any], field: str
) -> None:
    with pytest.raises(helm.HelmValuesError, match=field):
        chart.render({"worker": {"autoscaling": {"queueDepth": values}}}, name="t", namespace="t")


def test_the_schema_refuses_a_cpu_target_of_zero(chart: helm.Chart) -> None:
    # Over 100 stays allowed: utilisation is of the requests, and limits may be higher.
    values = {"api": {"autoscaling": {"targetCPUUtilizationPercentage": 0}}}
    with pytest.raises(helm.HelmValuesError, match="targetCPUUtilizationPercentage"):
        chart.render(values, name="t", namespace="t")

"""The Helm chart, rendered offline by the Helm library that helm-python-sdk embeds (there
is no helm binary here): strict lint, Kubernetes 1.30 schema validation of every object,
and the deployment rules of CONVENTIONS.md ("Helm")."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from tether.core import task_queues

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "tether"
KUBE_VERSION = "1.30.0"
ALL_INTERFACES = "0.0.0.0"  # noqa: S104 - a container listens on its pod's address
TMP = "/tmp"  # noqa: S108 - the pod's own emptyDir, not a shared host /tmp
# One process, the public port and the operations port (decision 0061).
API_COMMAND = ["tether", "api"]
BEAT_COMMAND = ["python", "-m", "celery", "-A", "workers.app", "beat"]
BEAT_COMMAND += ["--schedule", f"{TMP}/celerybeat-schedule"]
SECRET_URLS = {"TETHER_DATABASE_URL", "TETHER_REDIS_URL"}
HOT_REDIS_URL = "TETHER_HOT_REDIS_URL"
OWNER_URL = "TETHER_DB__OWNER_URL"
REGIONS = {"eu-west": "values-eu-west.yaml", "cn-north": "values-cn-north.yaml"}
# Overrides on top of the defaults that reach the templates' other branches.
FIXED_REPLICAS = {
    "api": {"autoscaling": {"enabled": False}, "replicaCount": 3},
    "worker": {"autoscaling": {"enabled": False}},
    "topologySpread": {"enabled": False},
    "serviceAccount": {"create": False, "name": "tether-existing"},
    "ingress": {"enabled": True},
}

# Indexing in a worker Deployment of its own, the other queues in the main one.
WORKER_POOLS = {
    "worker": {"queues": ["turns", "celery"]},
    "workerPools": [
        {"name": "knowledge", "queues": ["knowledge"], "replicaCount": 2},
        {
            "name": "memories",
            "queues": ["memories"],
            "autoscaling": {"minReplicas": 1, "maxReplicas": 4},
        },
    ],
}

# Uploaded files in the region's object store, its key from a Secret (decision 0083).
OBJECT_STORE = {
    "region": "eu-west",
    "files": {
        "backend": "s3",
        "endpoint": "https://minio.eu-west.example.com",
        "region": "eu-west-1",
        "bucket": "tether-eu-west-files",
        "keyPrefix": "uploads/",
    },
    "secrets": {"objectStore": {"existingSecret": "tether-eu-west-object-store"}},
}

Manifest = dict[str, Any]


def _values(value_set: str) -> dict[str, Any] | None:
    if value_set in REGIONS:
        return helm.values_from_yaml((CHART / REGIONS[value_set]).read_text())
    return {
        "fixed-replicas": FIXED_REPLICAS,
        "worker-pools": WORKER_POOLS,
        "object-store": OBJECT_STORE,
    }.get(value_set)


VALUE_SETS = ["default", *REGIONS, "fixed-replicas", "worker-pools", "object-store"]


def _parse(rendered: dict[str, str]) -> list[Manifest]:
    return [
        doc
        for template, text in sorted(rendered.items())
        if template.endswith(".yaml")
        for doc in yaml.safe_load_all(text)
        if doc
    ]


@pytest.fixture(scope="module")
def chart() -> Iterator[helm.Chart]:
    with helm.Chart.load(CHART) as loaded:
        yield loaded


@pytest.fixture(scope="module")
def renders(chart: helm.Chart) -> dict[str, list[Manifest]]:
    """Every value set rendered once for the whole module."""
    return {
        name: _parse(chart.render(_values(name), name=f"tether-{name}", namespace="tether"))
        for name in VALUE_SETS
    }


@pytest.fixture(params=VALUE_SETS)
def manifests(request: pytest.FixtureRequest, renders: dict[str, list[Manifest]]) -> list[Manifest]:
    return renders[request.param]


def _of_kind(manifests: list[Manifest], kind: str) -> list[Manifest]:
    return [m for m in manifests if m["kind"] == kind]


def _component(manifests: list[Manifest], kind: str, component: str) -> Manifest:
    (found,) = [
        m
        for m in _of_kind(manifests, kind)
        if m["metadata"]["labels"]["app.kubernetes.io/component"] == component
    ]
    return found


def _pod_specs(manifests: list[Manifest]) -> list[Manifest]:
    return [m["spec"]["template"]["spec"] for m in manifests if m["kind"] in {"Deployment", "Job"}]


def _containers(manifests: list[Manifest]) -> list[Manifest]:
    return [c for spec in _pod_specs(manifests) for c in spec["containers"]]


def _container(manifests: list[Manifest], kind: str, component: str) -> Manifest:
    (container,) = _component(manifests, kind, component)["spec"]["template"]["spec"]["containers"]
    return container


def _env(container: Manifest) -> dict[str, Manifest]:
    return {e["name"]: e for e in container.get("env", [])}


def _settings(manifests: list[Manifest]) -> dict[str, str]:
    (config_map,) = [m for m in _of_kind(manifests, "ConfigMap") if "TETHER_REGION" in m["data"]]
    return config_map["data"]


# ---- the chart as a whole -------------------------------------------------------------


def test_chart_metadata_is_v2_at_0_1_0(chart: helm.Chart) -> None:
    assert chart.metadata["apiVersion"] == "v2"
    assert (chart.version, chart.metadata["appVersion"]) == ("0.1.0", "0.1.0")


@pytest.mark.parametrize("value_set", VALUE_SETS)
def test_strict_lint_reports_no_warning_or_error(value_set: str) -> None:
    report = helm.lint(CHART, _values(value_set), strict=True, kube_version=f"v{KUBE_VERSION}")
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_every_object_validates_against_kubernetes_1_30_strict(manifests: list[Manifest]) -> None:
    for manifest in manifests:
        # Raises ValidationError, or SchemaNotFoundError for a kind 1.30 does not know.
        kubernetes_validate.validate(manifest, KUBE_VERSION, strict=True)


def test_renders_the_workloads_and_their_companions(manifests: list[Manifest]) -> None:
    kinds = sorted(m["kind"] for m in manifests)
    assert kinds.count("Deployment") == 3 + len(_pools(manifests))
    assert kinds.count("Job") == 1
    assert kinds.count("ConfigMap") == 2
    assert kinds.count("Service") == 2  # the API's, and the internal one of its ops port
    assert kinds.count("PodDisruptionBudget") == 2 + len(_pools(manifests))
    deployments = _of_kind(manifests, "Deployment")
    components = {m["metadata"]["labels"]["app.kubernetes.io/component"] for m in deployments}
    assert components == {"api", "worker", "beat", *_pools(manifests)}


def _pools(manifests: list[Manifest]) -> list[str]:
    """The components of the extra worker pools rendered."""
    return [
        m["metadata"]["labels"]["app.kubernetes.io/component"]
        for m in _of_kind(manifests, "Deployment")
        if m["metadata"]["labels"]["app.kubernetes.io/component"].startswith("worker-")
    ]


def test_a_worker_pool_takes_only_its_queues(renders: dict[str, list[Manifest]]) -> None:
    pooled = renders["worker-pools"]
    assert _pools(pooled) == ["worker-knowledge", "worker-memories"]
    knowledge = _component(pooled, "Deployment", "worker-knowledge")
    assert knowledge["metadata"]["name"] == "tether-worker-pools-worker-knowledge"
    assert knowledge["spec"]["replicas"] == 2
    (container,) = knowledge["spec"]["template"]["spec"]["containers"]
    env = _env(container)
    assert env["TETHER_WORKER__QUEUES"]["value"] == "knowledge"
    assert env["TETHER_WORKER__CONCURRENCY"]["value"] == "2"
    assert env["OTEL_SERVICE_NAME"]["value"] == "tether-worker-knowledge"
    assert container["command"] == ["tether", "worker"]
    main = _env(_container(pooled, "Deployment", "worker"))
    assert main["TETHER_WORKER__QUEUES"]["value"] == "turns,celery"
    # Its pods are its own: the main worker's selector does not take them.
    labels = knowledge["spec"]["template"]["metadata"]["labels"]
    selector = _component(pooled, "Deployment", "worker")["spec"]["selector"]["matchLabels"]
    assert not selector.items() <= labels.items()


def test_worker_pools_get_the_workers_budget_and_scale_when_asked(
    renders: dict[str, list[Manifest]],
) -> None:
    pooled = renders["worker-pools"]
    budgets = {
        m["metadata"]["labels"]["app.kubernetes.io/component"]: m
        for m in _of_kind(pooled, "PodDisruptionBudget")
    }
    assert set(budgets) == {"api", "worker", "worker-knowledge", "worker-memories"}
    for component in ("worker-knowledge", "worker-memories"):
        selector = budgets[component]["spec"]["selector"]["matchLabels"]
        pods = _component(pooled, "Deployment", component)["spec"]["template"]["metadata"]
        assert selector.items() <= pods["labels"].items()
        assert budgets[component]["spec"]["maxUnavailable"] == 1
    scaled = {
        h["spec"]["scaleTargetRef"]["name"]: h for h in _of_kind(pooled, "HorizontalPodAutoscaler")
    }
    memories = _component(pooled, "Deployment", "worker-memories")
    assert "replicas" not in memories["spec"]
    hpa = scaled[memories["metadata"]["name"]]
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 4)
    knowledge = _component(pooled, "Deployment", "worker-knowledge")
    assert knowledge["metadata"]["name"] not in scaled  # fixed: replicaCount 2


def test_autoscalers_target_existing_deployments_that_leave_replicas_to_them(
    renders: dict[str, list[Manifest]],
) -> None:
    manifests = renders["default"]
    deployments = {m["metadata"]["name"]: m for m in _of_kind(manifests, "Deployment")}
    autoscalers = _of_kind(manifests, "HorizontalPodAutoscaler")
    assert len(autoscalers) == 2
    for hpa in autoscalers:
        assert hpa["apiVersion"] == "autoscaling/v2"
        target = hpa["spec"]["scaleTargetRef"]
        assert target["kind"] == "Deployment"
        assert "replicas" not in deployments[target["name"]]["spec"]
    fixed = renders["fixed-replicas"]
    assert _of_kind(fixed, "HorizontalPodAutoscaler") == []
    assert _component(fixed, "Deployment", "api")["spec"]["replicas"] == 3


def test_disruption_budgets_and_spread_select_their_own_pods(manifests: list[Manifest]) -> None:
    for component in ("api", "worker"):
        pod_labels = _component(manifests, "Deployment", component)["spec"]["template"]["metadata"]
        selector = _component(manifests, "PodDisruptionBudget", component)["spec"]["selector"]
        assert selector["matchLabels"].items() <= pod_labels["labels"].items()
        spec = _component(manifests, "Deployment", component)["spec"]["template"]["spec"]
        for constraint in spec.get("topologySpreadConstraints", []):
            assert constraint["labelSelector"]["matchLabels"] == selector["matchLabels"]


def test_api_and_worker_spread_across_zones_and_nodes(renders: dict[str, list[Manifest]]) -> None:
    for component in ("api", "worker"):
        deployment = _component(renders["default"], "Deployment", component)
        constraints = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
        keys = [c["topologyKey"] for c in constraints]
        assert keys == ["topology.kubernetes.io/zone", "kubernetes.io/hostname"]


# ---- secrets only by reference --------------------------------------------------------


def test_no_secret_object_is_rendered(manifests: list[Manifest]) -> None:
    assert _of_kind(manifests, "Secret") == []


def test_connection_urls_come_only_from_secret_key_refs(manifests: list[Manifest]) -> None:
    for container in _containers(manifests):
        env = _env(container)
        for name in (SECRET_URLS | {HOT_REDIS_URL, OWNER_URL}) & env.keys():
            assert "value" not in env[name]
            assert set(env[name]["valueFrom"]["secretKeyRef"]) >= {"name", "key"}
    for config_map in _of_kind(manifests, "ConfigMap"):
        assert not (SECRET_URLS | {HOT_REDIS_URL, OWNER_URL}) & config_map["data"].keys()
    api_env = _env(_container(manifests, "Deployment", "api"))
    assert api_env.keys() >= SECRET_URLS


def test_provider_keys_are_secret_refs_too(renders: dict[str, list[Manifest]]) -> None:
    api_env = _env(_container(renders["eu-west"], "Deployment", "api"))
    providers = [e for name, e in api_env.items() if name.endswith("__API_KEY")]
    assert providers
    assert all("value" not in e and "secretKeyRef" in e["valueFrom"] for e in providers)


@pytest.mark.parametrize(
    ("values", "refusal"),
    [
        ({"workerPools": [{"queues": ["knowledge"]}]}, "must be 1-22 lowercase"),
        ({"workerPools": [{"name": "Big_Pool", "queues": ["knowledge"]}]}, "must be 1-22"),
        ({"workerPools": [{"name": "empty", "queues": []}]}, "name at least one queue"),
        ({"workerPools": [{"name": "typo", "queues": ["knowlege"]}]}, 'unknown queue "knowlege"'),
        (
            {
                "workerPools": [
                    {
                        "name": "k",
                        "queues": ["knowledge"],
                        "autoscaling": {"minReplicas": 3, "maxReplicas": 2},
                    }
                ]
            },
            "minReplicas <= maxReplicas",
        ),
        ({"worker": {"queues": ["turns", "memories"]}}, "no worker takes the knowledge queue"),
    ],
)
def test_worker_pools_that_would_crash_or_leave_a_queue_untaken_are_refused(
    chart: helm.Chart, values: dict[str, Any], refusal: str
) -> None:
    with pytest.raises(helm.HelmRenderError, match=refusal):
        chart.render(values, name="tether", namespace="tether")


def test_the_owners_database_url_reaches_the_migration_job_only(
    renders: dict[str, list[Manifest]],
) -> None:
    """The service logs in as a role that owns nothing; the tables' owner, which could
    switch row-level security off, is given to the migrations alone (docs/security.md)."""
    secret = {"name": "tether-eu-west-postgres-owner", "key": "database-url"}
    for name, manifests in renders.items():
        job = _env(_container(manifests, "Job", "migrate"))
        expected = {"name": OWNER_URL, "valueFrom": {"secretKeyRef": secret}}
        assert job.get(OWNER_URL) == (expected if name == "eu-west" else None), name
        assert "TETHER_DATABASE_URL" in job
        for deployment in _of_kind(manifests, "Deployment"):
            for container in deployment["spec"]["template"]["spec"]["containers"]:
                assert OWNER_URL not in _env(container), name


@pytest.mark.parametrize("name", ["TETHER_DATABASE_URL", OWNER_URL, HOT_REDIS_URL])
def test_a_url_in_extra_env_is_refused(chart: helm.Chart, name: str) -> None:
    values = {"config": {"extraEnv": {name: "postgresql://u:p@db/tether"}}}
    with pytest.raises(helm.HelmRenderError, match="would put a secret into a ConfigMap"):
        chart.render(values, name="tether", namespace="tether")


def test_the_hot_tier_redis_reaches_every_pod_alike_or_none(
    renders: dict[str, list[Manifest]],
) -> None:
    """A worker invalidating partitions in another Redis than the API reads them from
    would leave stale copies: every container that has the Redis gets the same one."""
    secret = {"name": "tether-eu-west-hot-redis", "key": "redis-url"}
    expected = {"name": HOT_REDIS_URL, "valueFrom": {"secretKeyRef": secret}}
    for name, manifests in renders.items():
        envs = [_env(c) for c in _containers(manifests)]
        refs = [env.get(HOT_REDIS_URL) for env in envs if "TETHER_REDIS_URL" in env]
        assert refs, name
        assert all(r == (expected if name == "eu-west" else None) for r in refs), name


def test_each_region_references_its_own_secrets(renders: dict[str, list[Manifest]]) -> None:
    seen: dict[str, set[str]] = {}
    for region in REGIONS:
        manifests = renders[region]
        assert _settings(manifests)["TETHER_REGION"] == region
        env = _env(_container(manifests, "Deployment", "api"))
        seen[region] = {env[name]["valueFrom"]["secretKeyRef"]["name"] for name in SECRET_URLS}
        assert all(region in secret for secret in seen[region])
    assert not seen["eu-west"] & seen["cn-north"]


# ---- pods -----------------------------------------------------------------------------


def test_every_container_runs_locked_down(manifests: list[Manifest]) -> None:
    for spec in _pod_specs(manifests):
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        tmp = {v["name"]: v for v in spec["volumes"]}["tmp"]
        assert "emptyDir" in tmp
        for container in spec["containers"]:
            context = container["securityContext"]
            assert context["runAsNonRoot"] is True
            assert context["runAsUser"] == 10001
            assert context["readOnlyRootFilesystem"] is True
            assert context["allowPrivilegeEscalation"] is False
            assert context["capabilities"] == {"drop": ["ALL"]}
            assert context["seccompProfile"] == {"type": "RuntimeDefault"}
            assert {"name": "tmp", "mountPath": TMP} in container["volumeMounts"]


def test_every_container_has_requests_and_limits(manifests: list[Manifest]) -> None:
    for container in _containers(manifests):
        assert set(container["resources"]["limits"]) == {"cpu", "memory"}
        assert set(container["resources"]["requests"]) == {"cpu", "memory"}


def test_api_probes_health_and_ready_on_its_port(manifests: list[Manifest]) -> None:
    api = _container(manifests, "Deployment", "api")
    ports = {p["name"]: p["containerPort"] for p in api["ports"]}
    for probe, path in (("livenessProbe", "/health"), ("readinessProbe", "/ready")):
        http = api[probe]["httpGet"]
        assert http["path"] == path
        # On the ops port, which only the internal Service exposes (decision 0061).
        assert ports.get(http["port"], http["port"]) == 9000


def test_workloads_run_their_commands(manifests: list[Manifest]) -> None:
    assert _container(manifests, "Deployment", "api")["command"] == API_COMMAND
    assert _container(manifests, "Deployment", "worker")["command"] == ["tether", "worker"]
    worker_env = _env(_container(manifests, "Deployment", "worker"))
    if not _pools(manifests):
        assert worker_env["TETHER_WORKER__QUEUES"]["value"] == ",".join(task_queues.ALL)
    assert _container(manifests, "Deployment", "beat")["command"] == BEAT_COMMAND
    assert _container(manifests, "Job", "migrate")["command"] == ["tether", "migrate", "upgrade"]
    assert _settings(manifests)["TETHER_PORT"] == "8000"
    assert _settings(manifests)["TETHER_API__OPS_PORT"] == "9000"


def test_beat_is_a_recreated_singleton(manifests: list[Manifest]) -> None:
    beat = _component(manifests, "Deployment", "beat")["spec"]
    assert beat["replicas"] == 1
    assert beat["strategy"] == {"type": "Recreate"}


def test_settings_map_holds_the_non_secret_settings(manifests: list[Manifest]) -> None:
    settings = _settings(manifests)
    assert settings["TETHER_HOST"] == ALL_INTERFACES
    expected = {"TETHER_REGION", "TETHER_LOG_LEVEL", "TETHER_PORT", "OTEL_TRACES_SAMPLER"}
    assert expected <= settings.keys()
    # Never the SDK switch: it would empty /metrics, which Prometheus and the queue-depth
    # autoscaler read whether or not OTLP export is on.
    assert "OTEL_SDK_DISABLED" not in settings
    exporting = "OTEL_EXPORTER_OTLP_ENDPOINT" in settings
    assert exporting != (settings.get("OTEL_TRACES_EXPORTER") == "none")
    for container in _containers(manifests):
        assert _env(container)["OTEL_SERVICE_NAME"]["value"].startswith("tether-")


def test_pods_roll_when_their_config_changes(chart: helm.Chart) -> None:
    def checksums(values: dict[str, Any] | None) -> set[str]:
        manifests = _parse(chart.render(values, name="tether", namespace="tether"))
        return {
            m["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
            for m in _of_kind(manifests, "Deployment")
        }

    before = checksums(None)
    assert len(before) == 1
    assert re.fullmatch(r"[0-9a-f]{64}", next(iter(before)))
    assert checksums({"config": {"logLevel": "DEBUG"}}) != before


# ---- migrations -----------------------------------------------------------------------


def test_migration_job_is_a_pre_install_and_pre_upgrade_hook(manifests: list[Manifest]) -> None:
    annotations = _component(manifests, "Job", "migrate")["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert "before-hook-creation" in annotations["helm.sh/hook-delete-policy"]


def test_migration_job_needs_nothing_the_release_has_not_created_yet(
    manifests: list[Manifest],
) -> None:
    own = {m["metadata"]["name"] for m in manifests if m["kind"] in {"ConfigMap", "ServiceAccount"}}
    spec = _component(manifests, "Job", "migrate")["spec"]["template"]["spec"]
    assert spec.get("serviceAccountName") not in own
    referenced = json.dumps(spec)
    assert not any(f'"{name}"' in referenced for name in own)
    assert "envFrom" not in spec["containers"][0]


# ---- policies -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["model.conf", "policy.csv"])
def test_chart_policy_copies_equal_the_repository_policies(name: str) -> None:
    assert (CHART / "files" / "policies" / name).read_bytes() == (
        REPO / "policies" / name
    ).read_bytes()


def test_policies_are_rendered_verbatim_and_mounted(manifests: list[Manifest]) -> None:
    (policies,) = [m for m in _of_kind(manifests, "ConfigMap") if "model.conf" in m["data"]]
    for name in ("model.conf", "policy.csv"):
        assert policies["data"][name] == (REPO / "policies" / name).read_text()
    for component in ("api", "worker"):
        mounts = _container(manifests, "Deployment", component)["volumeMounts"]
        assert {"name": "policies", "mountPath": "/app/policies", "readOnly": True} in mounts


# ---- values documentation and the image -----------------------------------------------


def _leaf_paths(values: dict[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            yield from _leaf_paths(value, f"{path}.")
        else:
            yield path


def test_every_value_is_documented_with_a_param_comment(chart: helm.Chart) -> None:
    documented = set(
        re.findall(r"^\s*## @param (\S+) \S", (CHART / "values.yaml").read_text(), re.M)
    )
    leaves = set(_leaf_paths(chart.values))
    undocumented = {
        leaf
        for leaf in leaves
        if not any(leaf == d or leaf.startswith(f"{d}.") for d in documented)
    }
    assert undocumented == set()
    stale = {
        d for d in documented if not any(leaf == d or leaf.startswith(f"{d}.") for leaf in leaves)
    }
    assert stale == set()


def test_image_default_command_and_user_match_the_chart(chart: helm.Chart) -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    (cmd,) = re.findall(r"^CMD (\[.*\])$", dockerfile, re.M)
    assert json.loads(cmd) == API_COMMAND == chart.values["api"]["command"]
    assert re.search(r"^USER 10001(:10001)?$", dockerfile, re.M)
    assert chart.values["securityContext"]["runAsUser"] == 10001


def test_every_pod_gets_the_one_audit_secret_and_none_renders_without_it(
    chart: helm.Chart, renders: dict[str, list[Manifest]]
) -> None:
    """Pods that derived their own audit keys would write chain links no other pod
    verifies: the secret is one reference, the same in every container, and required."""
    for name, manifests in renders.items():
        refs = {
            json.dumps(_env(_container(manifests, "Deployment", c))["TETHER_AUDIT__SECRET"])
            for c in ("api", "worker")
        }
        assert len(refs) == 1, (name, refs)
    values = {"secrets": {"auditSecret": {"existingSecret": ""}}}
    with pytest.raises(helm.HelmRenderError, match=r"auditSecret\.existingSecret is required"):
        chart.render(values, name="tether", namespace="tether")


def test_the_object_store_key_reaches_api_and_workers_only_by_reference(
    renders: dict[str, list[Manifest]],
) -> None:
    manifests = renders["object-store"]
    settings = _settings(manifests)
    assert settings["TETHER_FILES__BACKEND"] == "s3"
    assert settings["TETHER_FILES__BUCKET"] == "tether-eu-west-files"
    assert not any("ACCESS_KEY" in name for name in settings)
    for kind, component in (("Deployment", "api"), ("Deployment", "worker")):
        env = _env(_container(manifests, kind, component))
        for name in ("TETHER_FILES__ACCESS_KEY_ID", "TETHER_FILES__SECRET_ACCESS_KEY"):
            ref = env[name]["valueFrom"]["secretKeyRef"]
            assert ref["name"] == "tether-eu-west-object-store"
    beat = _env(_container(manifests, "Deployment", "beat"))
    assert "TETHER_FILES__SECRET_ACCESS_KEY" not in beat
    assert "TETHER_FILES__BACKEND" not in _settings(renders["default"])

"""The scheduled-backup CronJob: off by default; when on, `tether backup --keep N` into a
PersistentVolumeClaim, as the owner's login, with the chart's secure pod defaults."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest

from tests.charts.test_chart import CHART, KUBE_VERSION, Manifest, _parse

ON = {
    "backup": {"enabled": True, "keep": 5, "schedule": "0 2 * * *"},
    "secrets": {"ownerDatabase": {"existingSecret": "tether-owner"}},
}


def _render(values: dict[str, Any] | None) -> list[Manifest]:
    with helm.Chart.load(CHART) as chart:
        return _parse(chart.render(values, name="tether", namespace="tether"))


def test_no_backup_objects_by_default() -> None:
    kinds = {m["kind"] for m in _render(None)}
    assert "CronJob" not in kinds
    assert "PersistentVolumeClaim" not in kinds


def test_the_cronjob_backs_up_into_a_kept_claim_as_the_owner() -> None:
    manifests = _render(ON)
    for manifest in manifests:
        kubernetes_validate.validate(manifest, KUBE_VERSION, strict=True)
    (claim,) = [m for m in manifests if m["kind"] == "PersistentVolumeClaim"]
    assert claim["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    (cron,) = [m for m in manifests if m["kind"] == "CronJob"]
    assert cron["spec"]["schedule"] == "0 2 * * *"
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == ["tether", "backup", "--keep", "5", "/backups"]
    env = {e["name"]: e for e in container["env"]}
    owner = env["TETHER_DB__OWNER_URL"]["valueFrom"]["secretKeyRef"]
    assert owner["name"] == "tether-owner"
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["backups"]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["securityContext"]["runAsNonRoot"] is True


def test_an_existing_claim_is_used_as_it_is() -> None:
    values = {**ON, "backup": {**ON["backup"], "persistence": {"existingClaim": "nfs-backups"}}}
    manifests = _render(values)
    assert not [m for m in manifests if m["kind"] == "PersistentVolumeClaim"]
    (cron,) = [m for m in manifests if m["kind"] == "CronJob"]
    volumes = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["volumes"]
    assert {"name": "backups", "persistentVolumeClaim": {"claimName": "nfs-backups"}} in volumes


def test_backups_without_an_owner_login_fail_to_render() -> None:
    with pytest.raises(Exception, match="BYPASSRLS"):
        _render({"backup": {"enabled": True}})


def test_strict_lint_with_backups_on() -> None:
    report = helm.lint(CHART, ON, strict=True, kube_version=f"v{KUBE_VERSION}")
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_with_files_in_a_store_the_cronjob_gets_its_settings_and_key() -> None:
    """The backup copies the documents' objects (decision 0096): it needs the store."""
    values = {
        **ON,
        "files": {"backend": "s3", "bucket": "tether-files", "endpoint": "http://minio:9000"},
        "secrets": {**ON["secrets"], "objectStore": {"existingSecret": "tether-store"}},
    }
    manifests = _render(values)
    (cron,) = [m for m in manifests if m["kind"] == "CronJob"]
    kubernetes_validate.validate(cron, KUBE_VERSION, strict=True)
    (container,) = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert env["TETHER_FILES__BUCKET"]["value"] == "tether-files"
    for name in ("TETHER_FILES__ACCESS_KEY_ID", "TETHER_FILES__SECRET_ACCESS_KEY"):
        assert env[name]["valueFrom"]["secretKeyRef"]["name"] == "tether-store"
    without = _render(ON)
    (plain,) = [m for m in without if m["kind"] == "CronJob"]
    (container,) = plain["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert not [e for e in container["env"] if e["name"].startswith("TETHER_FILES__")]

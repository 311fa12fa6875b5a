//! The deployment files agree with the code: the App manifest asks for the
//! permissions and events docs/app.md ("Register the App") lists and the server accepts; the evidence
//! workflow uploads the artifact name and layout the gate reads, and probes the witnesses after
//! the head; fly.toml health-checks the route the server serves.

use serde_yaml_ng::Value;
use std::path::PathBuf;

fn read_yaml(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn manifest_permissions_and_events() {
    let m = read_yaml("app-manifest.yml");
    let perms = &m["default_permissions"];
    for (k, v) in [
        ("checks", "write"),
        ("pull_requests", "write"),
        ("contents", "write"),
        ("actions", "write"),
        ("metadata", "read"),
        ("merge_queues", "read"),
        ("issues", "write"),
    ] {
        assert_eq!(perms[k].as_str(), Some(v), "permission {k}");
    }
    let events: Vec<&str> = m["default_events"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    // Exactly the events of the accepted table (`github::event`), in its order.
    let mut table: Vec<&str> = Vec::new();
    for (event, _) in flakegate::github::event::Event::accepted() {
        if !table.contains(&event) {
            table.push(event);
        }
    }
    assert_eq!(
        events, table,
        "app-manifest.yml default_events against the accepted table"
    );
    assert!(
        flakegate::github::event::Event::accepted().any(|a| a == ("pull_request", "edited")),
        "retargeting (pull_request.edited) is accepted"
    );
    assert!(m["hook_attributes"]["url"].as_str().unwrap().ends_with("/webhook"));
}

#[test]
fn evidence_workflow_uploads_what_the_gate_reads() {
    let w = read_yaml("templates/workflows/flakegate-evidence.yml");
    let text = serde_yaml_ng::to_string(&w).unwrap();
    let default_artifact = flakegate::gate::config::Config::default().evidence.artifact;
    let steps = w["jobs"]["evidence"]["steps"].as_sequence().unwrap();
    let upload = steps
        .iter()
        .rev()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact"))
        })
        .unwrap();
    assert_eq!(upload["with"]["name"].as_str(), Some(default_artifact.as_str()));
    assert_eq!(upload["with"]["path"].as_str(), Some("evidence"));
    for part in [
        "--cov-context=test",
        "coverage json --show-contexts -o evidence/coverage.json",
        "evidence/results/",
        "path: evidence/probe",
        "evidence/meta.json",
    ] {
        assert!(text.contains(part), "workflow lacks {part}");
    }
    // Merge queues: the run for a merge group is its evidence, checked out at the group's shas.
    assert!(
        w["on"]["merge_group"]["types"]
            .as_sequence()
            .is_some_and(|t| t.iter().any(|a| a.as_str() == Some("checks_requested"))),
        "the workflow runs on merge_group checks_requested"
    );
    for part in ["github.event.merge_group.base_sha", "github.event.merge_group.head_sha"] {
        assert!(text.contains(part), "workflow lacks {part}");
    }
    // A CI matrix: each probe job uploads its own shard (its runs and a meta.json naming the
    // base sha it ran), and the evidence job keeps one directory per shard for the gate to check.
    assert!(
        text.contains("shard/meta.json"),
        "probe jobs write their shard's meta.json"
    );
    let download = steps
        .iter()
        .find(|s| s["with"]["pattern"].as_str() == Some("probe-run-*"))
        .expect("the evidence job downloads the probe shards");
    assert!(
        download["with"]["merge-multiple"].is_null(),
        "shards stay in their own directories"
    );
    // K matrix entries match K.
    let k: usize = w["env"]["K"].as_str().unwrap().parse().unwrap();
    assert_eq!(
        w["jobs"]["probe"]["strategy"]["matrix"]["run"]
            .as_sequence()
            .unwrap()
            .len(),
        k
    );
}

/// The head runs first; the probe then runs on the base only the witnesses the head's coverage
/// names (none: no probe), unless FULL_SUITE_PROBE keeps the whole suite; evidence is never
/// uploaded without the witnesses having been chosen.
#[test]
fn evidence_workflow_probes_the_witnesses_after_the_head() {
    let w = read_yaml("templates/workflows/flakegate-evidence.yml");
    let jobs = &w["jobs"];
    let needs = |job: &str| -> Vec<String> {
        match &jobs[job]["needs"] {
            Value::String(s) => vec![s.clone()],
            Value::Sequence(v) => v.iter().map(|n| n.as_str().unwrap().to_owned()).collect(),
            _ => Vec::new(),
        }
    };
    assert_eq!(w["env"]["FULL_SUITE_PROBE"].as_str(), Some("false"));
    assert!(
        needs("witnesses").contains(&"head".to_owned()),
        "witnesses after the head"
    );
    assert!(
        needs("probe").contains(&"witnesses".to_owned()),
        "the probe after the witnesses"
    );
    assert_eq!(
        jobs["probe"]["if"].as_str(),
        Some("needs.witnesses.outputs.probe != 'none'"),
        "no probe when nothing needs a witness"
    );
    let select = serde_yaml_ng::to_string(&jobs["witnesses"]).unwrap();
    for part in [
        "flakegate check",
        "--base \"$BASE\"",
        ".witnesses[][]",
        "probe=full",
        "probe=none",
    ] {
        assert!(select.contains(part), "the witnesses job lacks {part}");
    }
    let probe = serde_yaml_ng::to_string(&jobs["probe"]).unwrap();
    assert!(
        probe.contains("--collect-only"),
        "the probe runs only witnesses the base has"
    );
    let evidence_if = jobs["evidence"]["if"].as_str().unwrap();
    assert!(
        evidence_if.contains("needs.witnesses.result == 'success'") && evidence_if.contains("!cancelled()"),
        "{evidence_if}"
    );
}

#[test]
fn fly_health_check_is_the_served_route() {
    let text = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fly.toml")).unwrap();
    assert!(text.contains("path = \"/healthz\""));
    assert!(text.contains("internal_port = 3000"));
}

/// fly.toml runs several instances on one PostgreSQL: at least two machines, no volume (an
/// SQLite file on a volume belongs to one machine), and the database URL, which carries a
/// password, left to a secret.
#[test]
fn fly_runs_several_instances_on_postgres() {
    let text = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fly.toml")).unwrap();
    let settings: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert!(settings.contains(&"min_machines_running = 2"), "{text}");
    assert!(
        !settings.iter().any(|l| l.starts_with("[[mounts]]")),
        "no volume: {text}"
    );
    assert!(
        !settings.iter().any(|l| l.starts_with("DATABASE_URL")),
        "DATABASE_URL is a secret, not in [env]: {text}"
    );
    let lease = settings
        .iter()
        .find_map(|l| l.strip_prefix("FLAKEGATE_JOB_LEASE_SECONDS = "))
        .expect("the lease is set in [env]");
    let lease: u64 = lease.trim_matches('"').parse().expect("whole seconds");
    // Long enough that a slow evaluation keeps its lease through a few missed heartbeats
    // (every quarter of it), short enough that a dead machine's job moves on within about a
    // minute (docs/app.md, "Scaling out").
    assert!((30..=90).contains(&lease), "lease {lease} s");
}

/// The fixture project runs the shipped workflow (the corpus edits it), so they must not drift.
#[test]
fn fixture_project_carries_the_shipped_workflow() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let shipped = std::fs::read_to_string(root.join("templates/workflows/flakegate-evidence.yml")).unwrap();
    let fixture =
        std::fs::read_to_string(root.join("tests/fixtures/project/.github/workflows/flakegate-evidence.yml")).unwrap();
    assert_eq!(
        shipped, fixture,
        "copy the template to tests/fixtures/project/.github/workflows/ and rerun tests/fixtures/regen.sh"
    );
}

/// The template answers the ledger upkeep's dispatch: inputs `tests` and `k`, only the
/// upkeep-probe job runs then (and none of it otherwise), the inputs reach the shell through
/// the environment only, and its artifact is the evidence artifact the App reads.
#[test]
fn the_template_answers_the_ledger_upkeeps_dispatch() {
    let w = read_yaml("templates/workflows/flakegate-evidence.yml");
    let inputs = &w["on"]["workflow_dispatch"]["inputs"];
    assert_eq!(inputs["tests"]["required"].as_bool(), Some(true));
    assert!(inputs["k"].is_mapping(), "{inputs:?}");
    let jobs = &w["jobs"];
    assert_eq!(
        jobs["head"]["if"].as_str(),
        Some("github.event_name != 'workflow_dispatch'")
    );
    let upkeep = &jobs["upkeep-probe"];
    assert_eq!(upkeep["if"].as_str(), Some("github.event_name == 'workflow_dispatch'"));
    let steps = upkeep["steps"].as_sequence().unwrap();
    for step in steps {
        if let Some(run) = step["run"].as_str() {
            assert!(!run.contains("${{"), "an expression inside a run script: {run}");
        }
    }
    let runs = steps
        .iter()
        .find(|s| s["env"]["TESTS"].is_string())
        .expect("the step that runs the tests");
    assert_eq!(runs["env"]["TESTS"].as_str(), Some("${{ inputs.tests }}"));
    let script = runs["run"].as_str().unwrap();
    assert!(
        script.contains("-- \"${tests[@]}\""),
        "ids after `--`, never options: {script}"
    );
    assert!(
        script.contains("\"base_sha\": \"%s\", \"head_sha\": \"%s\""),
        "{script}"
    );
    let upload = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact"))
        })
        .unwrap();
    assert_eq!(upload["with"]["name"].as_str(), Some("flakegate-evidence"));
}

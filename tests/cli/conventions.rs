//! What a command-line user expects of any tool: completions and man pages generated from the
//! same definitions as `--help`, `--version` naming the commit, and `--color` honouring
//! `NO_COLOR`.

use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn flakegate(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_flakegate"));
    c.args(args).current_dir(root()).env_remove("NO_COLOR");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run flakegate")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

const SUBCOMMANDS: [&str; 9] = [
    "check",
    "history",
    "ledger",
    "probe",
    "serve",
    "setup",
    "schema",
    "completions",
    "man",
];

#[test]
fn completions_cover_every_subcommand_in_every_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let o = flakegate(&["completions", shell], &[]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{shell}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let script = stdout(&o);
        for sub in SUBCOMMANDS {
            assert!(script.contains(sub), "{shell}: no `{sub}` in\n{script}");
        }
        assert!(
            script.contains("--witnesses-of"),
            "{shell}: a nested flag is completed too"
        );
    }
    let o = flakegate(&["completions", "tcsh"], &[]);
    assert_eq!(o.status.code(), Some(2), "an unknown shell is a usage error");
    assert!(String::from_utf8_lossy(&o.stderr).contains("possible values"));
}

#[test]
fn man_pages_are_generated_for_the_command_and_each_subcommand() {
    let o = flakegate(&["man"], &[]);
    assert_eq!(o.status.code(), Some(0));
    let page = stdout(&o);
    assert!(page.contains(".TH flakegate 1"), "{page}");
    for sub in SUBCOMMANDS {
        assert!(
            page.contains(&format!("flakegate\\-{sub}")),
            "flakegate(1) names `{sub}`"
        );
    }

    let dir = tempfile::tempdir().unwrap();
    let o = flakegate(&["man", "--dir", dir.path().to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    for name in std::iter::once("flakegate".to_owned()).chain(SUBCOMMANDS.iter().map(|s| format!("flakegate-{s}"))) {
        let text =
            std::fs::read_to_string(dir.path().join(format!("{name}.1"))).unwrap_or_else(|e| panic!("{name}.1: {e}"));
        assert!(text.contains(&format!(".TH {name} 1")), "{name}.1:\n{text}");
    }
    let check = std::fs::read_to_string(dir.path().join("flakegate-check.1")).unwrap();
    assert!(check.contains("\\-\\-history"), "the page lists the subcommand's flags");
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let o = flakegate(&["--version"], &[]);
    assert_eq!(o.status.code(), Some(0));
    let v = stdout(&o);
    assert!(
        v.starts_with(&format!("flakegate {} (", env!("CARGO_PKG_VERSION"))),
        "{v}"
    );
    // Built from a checkout (as this test is): the commit git names, at the time of the build.
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(root())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    match head {
        Some(sha) => {
            let named = v.split("commit ").nth(1).map(|r| r.trim_end_matches([')', '\n']));
            let named = named.unwrap_or_else(|| panic!("no commit in {v:?}"));
            assert_eq!(named.len(), 12, "{v}");
            assert!(named.chars().all(|c| c.is_ascii_hexdigit()), "{v}");
            // The binary may predate the last commit (built, then committed): it names a
            // commit of this history either way.
            let known = Command::new("git")
                .args(["cat-file", "-e", &format!("{named}^{{commit}}")])
                .current_dir(root())
                .status()
                .unwrap();
            assert!(known.success(), "{named} is not a commit here (HEAD is {sha})");
        }
        None => assert!(v.contains("unknown commit"), "{v}"),
    }
}

#[test]
fn color_is_asked_for_or_follows_no_color() {
    let args = |color: &'static str| {
        [
            "--color",
            color,
            "check",
            "examples/shop/evidence",
            "--diff",
            "examples/shop/pr.diff",
            "--ledger",
            "examples/shop/flake-ledger.json",
            "--format",
            "text",
        ]
    };
    let escape = "\u{1b}[";
    let always = stdout(&flakegate(&args("always"), &[]));
    assert!(always.starts_with("flakegate: \u{1b}["), "{always}");
    assert!(always.contains("PASS_WITH_CAVEAT\u{1b}[0m"), "{always}");
    // Asked for explicitly, colour is given even where NO_COLOR is set.
    assert!(stdout(&flakegate(&args("always"), &[("NO_COLOR", "1")])).contains(escape));
    let never = stdout(&flakegate(&args("never"), &[]));
    assert!(!never.contains(escape), "{never}");
    // `auto` (the default) colours a terminal only: a pipe, as here, gets none; nor with NO_COLOR.
    assert!(!stdout(&flakegate(&args("auto"), &[])).contains(escape));
    assert!(!stdout(&flakegate(&args("auto"), &[("NO_COLOR", "1")])).contains(escape));
    // The text is the same apart from the colour.
    assert_eq!(
        always.replace("\u{1b}[1m\u{1b}[33m", "").replace("\u{1b}[0m", ""),
        never
    );
    let o = flakegate(&["--color", "sometimes", "--version"], &[]);
    assert_eq!(o.status.code(), Some(2));
}

fn schema(name: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(root().join("schemas").join(name)).unwrap()).unwrap()
}

fn validator(name: &str) -> jsonschema::Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&schema(name))
        .unwrap()
}

fn errors(v: &jsonschema::Validator, doc: &serde_json::Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect()
}

/// The committed schemas are what this build generates from its types: regenerate them with
/// `flakegate schema config > schemas/flakegate.schema.json` (and `ledger`, `blindness`).
#[test]
fn the_committed_schemas_are_generated_from_the_code() {
    for (of, file) in [
        ("config", "flakegate.schema.json"),
        ("ledger", "flake-ledger.schema.json"),
        ("blindness", "blindness.schema.json"),
    ] {
        let o = flakegate(&["schema", of], &[]);
        assert_eq!(o.status.code(), Some(0));
        let generated: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(
            generated,
            schema(file),
            "schemas/{file} is stale: run `flakegate schema {of} > schemas/{file}`"
        );
    }
}

/// Every configuration the docs show and every ledger the project ships validate; a typo'd
/// key, a missing owner or a date that is not a date do not.
#[test]
fn every_example_validates_and_mistakes_do_not() {
    let config = validator("flakegate.schema.json");
    let cli = std::fs::read_to_string(root().join("docs/cli.md")).unwrap();
    let section = cli.split("## Configuration").nth(1).unwrap();
    let section = section.split("### Editors").next().unwrap();
    let mut blocks = 0;
    for block in section.split("```yaml").skip(1) {
        let yaml = block.split("```").next().unwrap();
        let doc: serde_json::Value = serde_yaml_ng::from_str(yaml).unwrap();
        assert!(errors(&config, &doc).is_empty(), "{yaml}: {:?}", errors(&config, &doc));
        blocks += 1;
    }
    assert!(blocks >= 1, "docs/cli.md shows a configuration");
    for bad in [
        "policy:\n  strict_line: true\n",
        "mentions: sometimes\n",
        "policy:\n  signals:\n    weakend_test: off\n",
        "evidence:\n  timeout_minutes: soon\n",
    ] {
        let doc: serde_json::Value = serde_yaml_ng::from_str(bad).unwrap();
        assert!(!errors(&config, &doc).is_empty(), "{bad} validates");
    }

    let ledger = validator("flake-ledger.schema.json");
    for file in [
        "examples/shop/flake-ledger.json",
        "tests/fixtures/project/.github/flake-ledger.json",
        "tests/fixtures/cases/expired/ledger.json",
        "tests/fixtures/lcov/ledger.json",
        "tests/fixtures/lcov/ledger-bazel.json",
    ] {
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(root().join(file)).unwrap()).unwrap();
        assert!(errors(&ledger, &doc).is_empty(), "{file}: {:?}", errors(&ledger, &doc));
    }
    let entry = r#"{"test": "tests/t.py::test_a", "owner": "@o", "expires": "2027-01-31"}"#;
    let ok: serde_json::Value = serde_json::from_str(&format!(r#"{{"frozen": [{entry}]}}"#)).unwrap();
    assert!(errors(&ledger, &ok).is_empty());
    for bad in [
        r#"{"frozen": [{"test": "tests/t.py::test_a", "expires": "2027-01-31"}]}"#,
        r#"{"frozen": [{"test": "tests/t.py::test_a", "owner": "@o", "expires": "soon"}]}"#,
        r#"{"frozen": [{"test": "", "owner": "@o", "expires": "2027-01-31"}]}"#,
        r#"{"frozen": [{"test": "tests/t.py::test_a", "owner": "@o", "expires": "2027-01-31", "expiry": "x"}]}"#,
        r#"{"frozen": [], "version": 2}"#,
    ] {
        let doc: serde_json::Value = serde_json::from_str(bad).unwrap();
        assert!(!errors(&ledger, &doc).is_empty(), "{bad} validates");
    }
}

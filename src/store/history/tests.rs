use super::*;
use crate::gate::TestId;
use chrono::NaiveDate;

fn o(test: &str, sha: &str, kind: RunKind, passes: u32, failures: u32) -> Observation {
    Observation {
        test: TestId::new(test),
        passes,
        failures,
        source: Source {
            sha: sha.into(),
            kind,
            pr: Some(3),
            run_id: Some(77),
            attempt: Some(1),
            date: NaiveDate::from_ymd_opt(2026, 11, 20).unwrap(),
        },
    }
}

#[test]
fn a_runs_own_copy_reads_back_as_written_and_holds_only_the_judged_tests() {
    let run = vec![
        o("w1", "base", RunKind::Probe, 6, 1),
        o("bystander", "base", RunKind::Head, 1, 0),
        o("w2", "base", RunKind::Probe, 7, 0),
        o("w1", "head", RunKind::Head, 0, 1),
    ];
    // Grouped by source, so read back in another order: the same observations.
    let sorted = |mut v: Vec<Observation>| {
        v.sort_by(|a, b| (&a.test, &a.source).cmp(&(&b.test, &b.source)));
        v
    };
    let all = own_copy(&run, None).unwrap();
    assert_eq!(sorted(read_own_copy(&all).unwrap()), sorted(run.clone()));
    let judged = [TestId::new("w1"), TestId::new("w2")].into_iter().collect();
    let kept = own_copy(&run, Some(&judged)).unwrap();
    let back = read_own_copy(&kept).unwrap();
    assert_eq!(
        sorted(back.clone()),
        sorted(vec![run[0].clone(), run[2].clone(), run[3].clone()])
    );
    // Each source is written once: shorter than the observations one by one.
    assert!(kept.len() < serde_json::to_string(&back).unwrap().len(), "{kept}");
}

#[test]
fn a_copy_written_as_a_list_of_observations_or_dropped_still_reads() {
    let run = vec![o("w1", "base", RunKind::Probe, 6, 1)];
    let before = serde_json::to_string(&run).unwrap();
    assert_eq!(read_own_copy(&before).unwrap(), run);
    assert_eq!(read_own_copy("[]").unwrap(), Vec::<Observation>::new());
    assert!(read_own_copy("{\"groups\": 3}").is_err());
}

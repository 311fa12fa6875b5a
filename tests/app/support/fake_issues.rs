//! A stateful fake of a repository's issues (the App's expired-freezes issue and a person's),
//! served over the fake GitHub: list, create, read and edit, with a log of the requests.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use wiremock::{Request, ResponseTemplate};

use super::fake_github::{example, FakeGithub, APP_ID};

pub const ISSUES: &str = "/repos/{owner}/{repo}/issues";
pub const ISSUE: &str = "/repos/{owner}/{repo}/issues/{issue_number}";

#[derive(Debug, Clone)]
pub struct IssueState {
    pub number: u64,
    pub title: String,
    pub body: String,
    pub state: String,
    pub by_app: bool,
}

#[derive(Default)]
struct IssuesState {
    issues: BTreeMap<u64, IssueState>,
    /// (method, OpenAPI template) of every request.
    log: Vec<(String, String)>,
}

/// The issues of one repository, served at priority 5 (over `FakeRepo`'s catch-all for the
/// repository), each request screened by the fake GitHub first.
#[derive(Clone)]
pub struct FakeIssues {
    state: Arc<Mutex<IssuesState>>,
    owner: String,
    name: String,
}

impl FakeIssues {
    pub async fn mount(fake: &FakeGithub, owner: &str, name: &str) -> FakeIssues {
        let issues = FakeIssues {
            state: Arc::default(),
            owner: owner.to_owned(),
            name: name.to_owned(),
        };
        let me = issues.clone();
        fake.mock_prefix(&format!("/repos/{owner}/{name}/issues"), 5, move |req, template| {
            me.serve(req, template)
        })
        .await;
        issues
    }

    fn json(&self, i: &IssueState) -> Value {
        let mut v = example("issue");
        v["number"] = json!(i.number);
        v["title"] = json!(i.title);
        v["body"] = json!(i.body);
        v["state"] = json!(i.state);
        v["url"] = json!(format!(
            "https://api.github.com/repos/{}/{}/issues/{}",
            self.owner, self.name, i.number
        ));
        v.as_object_mut().unwrap().remove("pull_request");
        if i.by_app {
            v["user"]["login"] = json!("flakegate[bot]");
            v["user"]["type"] = json!("Bot");
            v["performed_via_github_app"] = json!({ "id": APP_ID, "slug": "flakegate", "name": "flakegate" });
        } else {
            v["user"]["login"] = json!("octocat");
            v["user"]["type"] = json!("User");
            v["performed_via_github_app"] = Value::Null;
        }
        v
    }

    fn serve(&self, req: &Request, template: &str) -> ResponseTemplate {
        let method = req.method.as_str().to_uppercase();
        let mut st = self.state.lock().unwrap();
        st.log.push((method.clone(), template.to_owned()));
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let number = req.url.path().rsplit('/').next().and_then(|n| n.parse::<u64>().ok());
        match (method.as_str(), template) {
            ("GET", ISSUES) => {
                let want = req
                    .url
                    .query_pairs()
                    .find(|(k, _)| k == "state")
                    .map_or("open".to_owned(), |(_, v)| v.into_owned());
                let page: usize = req
                    .url
                    .query_pairs()
                    .find(|(k, _)| k == "page")
                    .and_then(|(_, v)| v.parse().ok())
                    .unwrap_or(1);
                let listed: Vec<Value> = st
                    .issues
                    .values()
                    .filter(|i| want == "all" || i.state == want)
                    .skip((page - 1) * 100)
                    .take(100)
                    .map(|i| self.json(i))
                    .collect();
                ResponseTemplate::new(200).set_body_json(Value::Array(listed))
            }
            ("POST", ISSUES) => {
                let number = st.issues.keys().max().copied().unwrap_or(0) + 1;
                let issue = IssueState {
                    number,
                    title: body["title"].as_str().unwrap_or("").to_owned(),
                    body: body["body"].as_str().unwrap_or("").to_owned(),
                    state: "open".into(),
                    by_app: true,
                };
                let v = self.json(&issue);
                st.issues.insert(number, issue);
                ResponseTemplate::new(201).set_body_json(v)
            }
            ("GET", ISSUE) => match number.and_then(|n| st.issues.get(&n)) {
                Some(i) => ResponseTemplate::new(200).set_body_json(self.json(i)),
                None => ResponseTemplate::new(404).set_body_json(json!({ "message": "Not Found" })),
            },
            ("PATCH", ISSUE) => {
                let Some(i) = number.and_then(|n| st.issues.get_mut(&n)) else {
                    return ResponseTemplate::new(404).set_body_json(json!({ "message": "Not Found" }));
                };
                if let Some(b) = body["body"].as_str() {
                    i.body = b.to_owned();
                }
                if let Some(s) = body["state"].as_str() {
                    i.state = s.to_owned();
                }
                let i = i.clone();
                ResponseTemplate::new(200).set_body_json(self.json(&i))
            }
            _ => ResponseTemplate::new(501).set_body_json(json!({ "message": "fake issues: not served" })),
        }
    }

    pub fn add_user_issue(&self, body: &str) {
        let mut st = self.state.lock().unwrap();
        let number = st.issues.keys().max().copied().unwrap_or(0) + 1;
        st.issues.insert(
            number,
            IssueState {
                number,
                title: "a person's issue".into(),
                body: body.into(),
                state: "open".into(),
                by_app: false,
            },
        );
    }

    /// The App's issues.
    pub fn ours(&self) -> Vec<IssueState> {
        self.state
            .lock()
            .unwrap()
            .issues
            .values()
            .filter(|i| i.by_app)
            .cloned()
            .collect()
    }

    pub fn calls(&self, method: &str, template: &str) -> usize {
        let st = self.state.lock().unwrap();
        st.log.iter().filter(|(m, t)| m == method && t == template).count()
    }

    pub fn all_calls(&self) -> usize {
        self.state.lock().unwrap().log.len()
    }
}

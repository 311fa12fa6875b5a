//! The store methods whose SQL and code are the same on SQLite and PostgreSQL,
//! written once: each backend expands them into its own `impl` with its own
//! `Db` type and `pool`. Only opening, migrating and claiming differ.

macro_rules! common_store_methods {
    () => {
        pub(super) async fn job_gauges(&self) -> anyhow::Result<crate::metrics::JobGauges> {
            let rows: Vec<(String, i64, i64)> = sqlx::query_as::<Db, _>(sql::JOB_GAUGES)
                .fetch_all(&self.pool)
                .await
                .context("counting jobs")?;
            let mut g = crate::metrics::JobGauges::default();
            for (state, n, failed) in rows {
                let (n, failed) = (n.max(0) as u64, failed.max(0) as u64);
                match state.as_str() {
                    "queued" => {
                        g.queued = n - failed.min(n);
                        g.failed = failed.min(n);
                    }
                    "running" => g.running = n,
                    _ => g.dead = n,
                }
            }
            Ok(g)
        }

        pub(super) async fn ping(&self) -> anyhow::Result<()> {
            sqlx::query("SELECT 1").execute(&self.pool).await?;
            Ok(())
        }

        pub(super) async fn record_delivery(&self, d: &NewDelivery, now: DateTime<Utc>) -> anyhow::Result<Recorded> {
            let id: Option<(i64,)> = sqlx::query_as::<Db, _>(sql::RECORD)
                .bind(&d.delivery_id)
                .bind(&d.event)
                .bind(&d.action)
                .bind(&d.repo)
                .bind(d.pr.map(|n| n as i64))
                .bind(&d.head_sha)
                .bind(&d.payload)
                .bind(millis(now))
                .fetch_optional(&self.pool)
                .await
                .context("recording a delivery")?;
            Ok(match id {
                Some((id,)) => Recorded::Inserted(JobId(id)),
                None => Recorded::Duplicate,
            })
        }

        pub(super) async fn trim_finished(&self, before: DateTime<Utc>) -> anyhow::Result<u64> {
            let n = sqlx::query::<Db>(sql::TRIM_FINISHED)
                .bind(millis(before))
                .execute(&self.pool)
                .await
                .context("trimming finished jobs")?
                .rows_affected();
            Ok(n)
        }

        pub(super) async fn complete(&self, id: JobId, worker: &str) -> anyhow::Result<bool> {
            let n = sqlx::query::<Db>(sql::COMPLETE)
                .bind(id.0)
                .bind(worker)
                .execute(&self.pool)
                .await?
                .rows_affected();
            Ok(n == 1)
        }

        pub(super) async fn release(&self, id: JobId, worker: &str) -> anyhow::Result<bool> {
            let n = sqlx::query::<Db>(sql::RELEASE)
                .bind(id.0)
                .bind(worker)
                .execute(&self.pool)
                .await?
                .rows_affected();
            Ok(n == 1)
        }

        pub(super) async fn fail(
            &self,
            id: JobId,
            worker: &str,
            error: &str,
            now: DateTime<Utc>,
            not_before: Option<DateTime<Utc>>,
        ) -> anyhow::Result<Failed> {
            let mut tx = self.pool.begin().await?;
            let Some((attempts,)): Option<(i64,)> = sqlx::query_as::<Db, _>(sql::BUMP_ATTEMPTS)
                .bind(id.0)
                .bind(worker)
                .bind(error)
                .fetch_optional(&mut *tx)
                .await?
            else {
                // Not ours any more (or not running): leave it to whoever holds it.
                tx.rollback().await?;
                return Ok(Failed::LeaseLost);
            };
            let attempts = u32::try_from(attempts).unwrap_or(u32::MAX);
            let outcome = if attempts >= self.policy.max_attempts {
                Failed::Dead
            } else {
                // GitHub's own word (Retry-After, a rate-limit reset) is kept exactly: no backoff
                // floor delays it, and nothing runs before it.
                let at = match not_before {
                    Some(t) => t.max(now),
                    None => now + self.policy.backoff_for(id, attempts),
                };
                Failed::Retry { at }
            };
            let (state, at) = match outcome {
                Failed::Retry { at } => (JobState::Queued, at),
                Failed::Dead | Failed::LeaseLost => (JobState::Dead, now),
            };
            sqlx::query::<Db>(sql::SET_RETRY)
                .bind(id.0)
                .bind(state.as_str())
                .bind(millis(at))
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(outcome)
        }

        pub(super) async fn supersede(&self, repo: &str, pr: u64, head_sha: &str) -> anyhow::Result<u64> {
            let mut tx = self.pool.begin().await?;
            sqlx::query::<Db>(sql::SET_HEAD)
                .bind(repo)
                .bind(pr as i64)
                .bind(head_sha)
                .execute(&mut *tx)
                .await?;
            let n = sqlx::query::<Db>(sql::SUPERSEDE)
                .bind(repo)
                .bind(pr as i64)
                .bind(head_sha)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            tx.commit().await?;
            Ok(n)
        }

        pub(super) async fn current_head(&self, repo: &str, pr: u64) -> anyhow::Result<Option<String>> {
            let row: Option<(String,)> = sqlx::query_as::<Db, _>(sql::CURRENT_HEAD)
                .bind(repo)
                .bind(pr as i64)
                .fetch_optional(&self.pool)
                .await?;
            Ok(row.map(|(s,)| s))
        }

        pub(super) async fn job(&self, id: JobId) -> anyhow::Result<Option<Job>> {
            let q = format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = $1");
            let row: Option<JobRow> = sqlx::query_as::<Db, _>(&q)
                .bind(id.0)
                .fetch_optional(&self.pool)
                .await?;
            row.map(job_from_row).transpose()
        }

        pub(super) async fn latest_delivery(
            &self,
            repo: &str,
            head_sha: &str,
            event: &str,
            action: &str,
        ) -> anyhow::Result<Option<Job>> {
            let q = sql::LATEST_DELIVERY.replace("{columns}", JOB_COLUMNS);
            let row: Option<JobRow> = sqlx::query_as::<Db, _>(&q)
                .bind(repo)
                .bind(head_sha)
                .bind(event)
                .bind(action)
                .fetch_optional(&self.pool)
                .await?;
            row.map(job_from_row).transpose()
        }

        pub(super) async fn jobs(&self) -> anyhow::Result<Vec<Job>> {
            let q = format!("SELECT {JOB_COLUMNS} FROM jobs ORDER BY id");
            let rows: Vec<JobRow> = sqlx::query_as::<Db, _>(&q).fetch_all(&self.pool).await?;
            rows.into_iter().map(job_from_row).collect()
        }

        pub(super) async fn check_run_id(&self, repo: &str, head_sha: &str) -> anyhow::Result<Option<u64>> {
            let row: Option<(i64,)> = sqlx::query_as::<Db, _>(sql::CHECK_RUN)
                .bind(repo)
                .bind(head_sha)
                .fetch_optional(&self.pool)
                .await?;
            Ok(row.map(|(id,)| id as u64))
        }

        pub(super) async fn set_check_run_id(&self, repo: &str, head_sha: &str, id: u64) -> anyhow::Result<()> {
            sqlx::query::<Db>(sql::SET_CHECK_RUN)
                .bind(repo)
                .bind(head_sha)
                .bind(id as i64)
                .execute(&self.pool)
                .await?;
            Ok(())
        }

        pub(super) async fn published_annotations(
            &self,
            repo: &str,
            head_sha: &str,
            check_run_id: u64,
        ) -> anyhow::Result<Vec<String>> {
            let row: Option<(String,)> = sqlx::query_as::<Db, _>(sql::PUBLISHED)
                .bind(repo)
                .bind(head_sha)
                .bind(check_run_id as i64)
                .fetch_optional(&self.pool)
                .await?;
            Ok(row
                .map(|(d,)| d.lines().map(str::to_owned).collect())
                .unwrap_or_default())
        }

        pub(super) async fn set_published_annotations(
            &self,
            repo: &str,
            head_sha: &str,
            check_run_id: u64,
            digests: &[String],
        ) -> anyhow::Result<()> {
            sqlx::query::<Db>(sql::SET_PUBLISHED)
                .bind(repo)
                .bind(head_sha)
                .bind(check_run_id as i64)
                .bind(digests.join("\n"))
                .execute(&self.pool)
                .await?;
            Ok(())
        }

        pub(super) async fn pr_verdicts(&self, repo: &str, head_sha: &str) -> anyhow::Result<Vec<PrVerdict>> {
            let rows: Vec<(i64, String, String, String, String, String)> = sqlx::query_as::<Db, _>(sql::PR_VERDICTS)
                .bind(repo)
                .bind(head_sha)
                .fetch_all(&self.pool)
                .await?;
            Ok(rows
                .into_iter()
                .map(|(pr, base_sha, base_ref, verdict, conclusion, title)| PrVerdict {
                    pr: pr as u64,
                    base_sha,
                    base_ref,
                    verdict,
                    conclusion,
                    title,
                })
                .collect())
        }

        pub(super) async fn set_pr_verdict(&self, repo: &str, head_sha: &str, v: &PrVerdict) -> anyhow::Result<()> {
            sqlx::query::<Db>(sql::SET_PR_VERDICT)
                .bind(repo)
                .bind(head_sha)
                .bind(v.pr as i64)
                .bind(&v.base_sha)
                .bind(&v.base_ref)
                .bind(&v.verdict)
                .bind(&v.conclusion)
                .bind(&v.title)
                .execute(&self.pool)
                .await?;
            Ok(())
        }

        pub(super) async fn remove_pr_verdict(&self, repo: &str, head_sha: &str, pr: u64) -> anyhow::Result<()> {
            sqlx::query::<Db>(sql::REMOVE_PR_VERDICT)
                .bind(repo)
                .bind(head_sha)
                .bind(pr as i64)
                .execute(&self.pool)
                .await?;
            Ok(())
        }

        pub(super) async fn claim_repository_name(&self, repo: &str, repo_id: i64) -> anyhow::Result<bool> {
            let mut tx = self.pool.begin().await?;
            let known: Option<(i64,)> = sqlx::query_as::<Db, _>(sql::REPOSITORY_ID)
                .bind(repo)
                .fetch_optional(&mut *tx)
                .await?;
            if known == Some((repo_id,)) {
                return Ok(false);
            }
            let another = known.is_some();
            if another {
                for statement in sql::FORGET_REPOSITORY {
                    sqlx::query::<Db>(statement).bind(repo).execute(&mut *tx).await?;
                }
            }
            sqlx::query::<Db>(sql::SET_REPOSITORY_ID)
                .bind(repo)
                .bind(repo_id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(another)
        }

        pub(super) async fn evidence_run(&self, repo: &str, head_sha: &str) -> anyhow::Result<Option<EvidenceRun>> {
            let row: Option<(i64, String, Option<String>)> = sqlx::query_as::<Db, _>(sql::EVIDENCE_RUN)
                .bind(repo)
                .bind(head_sha)
                .fetch_optional(&self.pool)
                .await?;
            Ok(row.map(|(id, workflow_path, cut_short)| EvidenceRun {
                run_id: id as u64,
                workflow_path,
                cut_short,
            }))
        }

        pub(super) async fn set_evidence_run(
            &self,
            repo: &str,
            head_sha: &str,
            run: &EvidenceRun,
        ) -> anyhow::Result<()> {
            sqlx::query::<Db>(sql::SET_EVIDENCE_RUN)
                .bind(repo)
                .bind(head_sha)
                .bind(run.run_id as i64)
                .bind(&run.workflow_path)
                .bind(&run.cut_short)
                .execute(&self.pool)
                .await?;
            Ok(())
        }

        pub(super) async fn renew(
            &self,
            id: JobId,
            worker: &str,
            now: DateTime<Utc>,
            lease: std::time::Duration,
        ) -> anyhow::Result<bool> {
            let n = sqlx::query::<Db>(sql::RENEW)
                .bind(id.0)
                .bind(worker)
                .bind(millis(now).saturating_add(duration_ms(lease)))
                .execute(&self.pool)
                .await?
                .rows_affected();
            Ok(n == 1)
        }

        pub(super) async fn comment(&self, repo: &str, pr: u64) -> anyhow::Result<Option<CommentState>> {
            let row: Option<(i64, String)> = sqlx::query_as::<Db, _>(sql::COMMENT)
                .bind(repo)
                .bind(pr as i64)
                .fetch_optional(&self.pool)
                .await?;
            Ok(row.map(|(id, body_sha256)| CommentState {
                comment_id: id as u64,
                body_sha256,
            }))
        }

        pub(super) async fn set_comment(&self, repo: &str, pr: u64, c: &CommentState) -> anyhow::Result<()> {
            sqlx::query::<Db>(sql::SET_COMMENT)
                .bind(repo)
                .bind(pr as i64)
                .bind(c.comment_id as i64)
                .bind(&c.body_sha256)
                .execute(&self.pool)
                .await?;
            Ok(())
        }

        pub(super) async fn publication(&self, repo: &str, subject: &str) -> anyhow::Result<Option<String>> {
            let row: Option<(String,)> = sqlx::query_as::<Db, _>(sql::PUBLICATION)
                .bind(repo)
                .bind(subject)
                .fetch_optional(&self.pool)
                .await?;
            Ok(row.map(|(d,)| d))
        }

        pub(super) async fn set_publication(&self, repo: &str, subject: &str, digest: &str) -> anyhow::Result<()> {
            sqlx::query::<Db>(sql::SET_PUBLICATION)
                .bind(repo)
                .bind(subject)
                .bind(digest)
                .execute(&self.pool)
                .await?;
            Ok(())
        }

        pub(super) async fn expiry_issue(&self, repo: &str) -> anyhow::Result<Option<ExpiryIssue>> {
            let row: Option<(i64, String)> = sqlx::query_as::<Db, _>(sql::EXPIRY_ISSUE)
                .bind(repo)
                .fetch_optional(&self.pool)
                .await?;
            Ok(row.map(|(n, list_sha256)| ExpiryIssue {
                issue_number: (n > 0).then_some(n as u64),
                list_sha256,
            }))
        }

        pub(super) async fn set_expiry_issue(&self, repo: &str, issue: &ExpiryIssue) -> anyhow::Result<()> {
            sqlx::query::<Db>(sql::SET_EXPIRY_ISSUE)
                .bind(repo)
                .bind(issue.issue_number.map_or(0, |n| n as i64))
                .bind(&issue.list_sha256)
                .execute(&self.pool)
                .await?;
            Ok(())
        }

        pub(super) async fn try_lock(
            &self,
            name: &str,
            owner: &str,
            now: DateTime<Utc>,
            ttl: std::time::Duration,
        ) -> anyhow::Result<bool> {
            let n = sqlx::query::<Db>(sql::TRY_LOCK)
                .bind(name)
                .bind(owner)
                .bind(millis(now).saturating_add(duration_ms(ttl)))
                .bind(millis(now))
                .execute(&self.pool)
                .await?
                .rows_affected();
            Ok(n == 1)
        }

        pub(super) async fn unlock(&self, name: &str, owner: &str) -> anyhow::Result<()> {
            sqlx::query::<Db>(sql::UNLOCK)
                .bind(name)
                .bind(owner)
                .execute(&self.pool)
                .await?;
            Ok(())
        }
    };
}

//! The scheduler's watchdog for jobs that Ballista 55 stops scheduling. After an executor is lost
//! under a plan that exchanges rows, Ballista rolls stages back and resubmits them, but a
//! resubmitted stage can end up with no task running and none handed out again, although live
//! executors ask for work: the job waits for ever and so does its client (seen in 6 of 10 trials
//! of losing one of two executors under `queries/dedup.sql`). tokq cannot repair Ballista's
//! stage graph from outside, so the watchdog ends such a job: a running job with no task running
//! for the whole window, on a cluster where no other task runs either, is cancelled, and its
//! client resubmits the statement (see the runner's cluster retry). A job that runs a task, however
//! long, or waits behind another job's tasks, is never touched.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ballista_core::JobId;
use ballista_scheduler::scheduler_server::SchedulerServer;
use datafusion_proto::protobuf::{LogicalPlanNode, PhysicalPlanNode};

/// How often the watchdog looks.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// Watches `scheduler`'s running jobs and cancels one that has had no running task for `window`
/// while nothing else ran.
pub async fn watch(scheduler: SchedulerServer<LogicalPlanNode, PhysicalPlanNode>, window: Duration) {
    let mut idle_since: HashMap<JobId, Instant> = HashMap::new();
    loop {
        tokio::time::sleep(LOOK_EVERY).await;
        let jobs = scheduler.state.task_manager.get_running_job_cache();
        let mut busy = false;
        for job in jobs.values() {
            busy |= !job.execution_graph.read().await.running_tasks().is_empty();
        }
        // Any task running anywhere resets every clock: a job may be waiting behind it.
        if busy {
            idle_since.clear();
            continue;
        }
        idle_since.retain(|id, _| jobs.contains_key(id));
        for id in jobs.keys() {
            let since = *idle_since.entry(id.clone()).or_insert_with(Instant::now);
            if since.elapsed() >= window {
                log::warn!(
                    "job {id} has had no task running for {} s while executors wait for work (Ballista lost its tasks after an executor was lost); cancelling it so that its client resubmits the statement",
                    window.as_secs()
                );
                if let Err(e) = scheduler.cancel_job(id.clone()).await {
                    log::error!("cannot cancel the stalled job {id}: {e}");
                }
                idle_since.remove(id);
            }
        }
    }
}

//! The counting side of `perf stat` as a library: a [`Plan`] (events, targets, cgroups,
//! aggregation) checked before anything opens, a [`Runner`] that counts once (intervals,
//! timeout, delay, the command's exit), and rows ([`build_rows`], [`summarize`]) with
//! scaling, aggregation by CPU/core/socket/node/thread/cgroup and perf's shadow metrics.
//! The `perfkit stat` command only formats the rows.
//!
//! ```
//! use perfkit_engine::stat::{Plan, Runner, RunOptions, StatConfig, summarize};
//! let plan = Plan::new(&StatConfig {
//!     events: vec![("task-clock,page-faults".into(), vec![])],
//!     command: vec!["true".into()],
//!     ..StatConfig::default()
//! })?;
//! let opts = RunOptions { inherit: true, ..RunOptions::default() };
//! let run = Runner::new().run(&plan, &opts, &mut |_| Ok(()))?;
//! let rows = summarize(&plan, &[run], false);
//! assert_eq!(rows[0].event, "task-clock");
//! assert!(rows[0].value > 0.0, "the command ran on a CPU");
//! # Ok::<(), perfkit_engine::Error>(())
//! ```

mod advice;
mod cache;
mod metrics;
mod plan;
mod record;
mod rows;
mod run;
mod sets;
mod tool;
mod trigger;
mod user_metrics;

pub use advice::{CheckPlan, PmuModel, fits, group_warnings};
pub use cache::{cache_id, highest_level};
pub use metrics::{
    compute_metrics, is_clock, is_percent_metric, mean_stddev_of_mean, rel_stddev_pct,
};
pub use plan::{Aggr, Plan, Scope, StatConfig, cgroup_root};
pub use record::{StatRecords, StatReport, read_stat, stat_records};
pub use rows::{Row, State, build_rows, summarize};
pub use run::{ControlCmd, Progress, RunOptions, RunResult, Runner, StopHandle, delta, read_all};
pub use sets::{EventBound, SetInfo, SetSchedule, SetsReport, Switching, set_ranges};
pub use tool::{TOOL_TYPE, Tool};
pub use trigger::Trigger;
pub use user_metrics::MetricUse;

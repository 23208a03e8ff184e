//! Whom to measure, from perf's flags: `-p`/`-t` task lists and `-C` CPU lists, checked
//! as they are parsed, with one message for each mistake whichever command reads them.

use crate::{Error, Result};
use std::path::Path;

/// The ids of a `-p`/`-t` list (`1234,1240`), each a positive number.
pub fn parse_task_ids(list: &str, flag: &'static str) -> Result<Vec<i32>> {
    let ids: Vec<i32> = list
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            p.trim()
                .parse::<i32>()
                .ok()
                .filter(|v| *v > 0)
                .ok_or_else(|| Error::BadTaskId {
                    flag,
                    item: p.to_string(),
                })
        })
        .collect::<Result<_>>()?;
    if ids.is_empty() {
        return Err(Error::BadTaskId {
            flag,
            item: list.to_string(),
        });
    }
    Ok(ids)
}

/// Every thread of the processes of a `-p` list.
pub fn threads_of_pids(list: &str) -> Result<Vec<i32>> {
    let mut out = Vec::new();
    for pid in parse_task_ids(list, "-p")? {
        out.extend(perfkit::threads_of(pid).map_err(|_| Error::NoSuchTask {
            flag: "-p",
            id: pid,
        })?);
    }
    Ok(out)
}

/// The threads of a `-t` list, each checked to exist.
pub fn existing_tids(list: &str) -> Result<Vec<i32>> {
    let tids = parse_task_ids(list, "-t")?;
    for &t in &tids {
        if !Path::new(&format!("/proc/{t}")).exists() {
            return Err(Error::NoSuchTask { flag: "-t", id: t });
        }
    }
    Ok(tids)
}

/// The CPUs to measure: a `-C` list checked against the CPUs this machine has and the
/// ones online (one message for both commands), or every online CPU.
pub fn cpus(list: Option<&str>) -> Result<Vec<u32>> {
    let online = perfkit::cpus::online().map_err(|e| Error::io("reading the online CPUs", e))?;
    let Some(list) = list else {
        return Ok(online);
    };
    let possible = perfkit::cpus::possible().unwrap_or_else(|_| online.clone());
    let cpus = perfkit::cpus::parse_list(list, &possible).map_err(|source| Error::Cpus {
        list: list.to_string(),
        source,
    })?;
    perfkit::cpus::check_online(&cpus, &online).map_err(|source| Error::Cpus {
        list: list.to_string(),
        source,
    })?;
    Ok(cpus)
}

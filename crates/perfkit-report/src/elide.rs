//! perf's elision of sort keys a filter pins to one value: with `--comm wl` every row's
//! command is `wl`, so the column is left out and the header says `# comm: wl` instead.
//! Leaving out every column is pointless, so then all of them stay (the notes are printed
//! all the same, as perf prints them).

use crate::report::{Filter, SortKey};

/// The sort keys to show and the header notes (`comm: wl`) for `sort` under `filter`.
pub fn elide(sort: &[SortKey], filter: &Filter) -> (Vec<SortKey>, Vec<String>) {
    let single = |list: &[String]| match list {
        [one] => Some(one.clone()),
        _ => None,
    };
    let mut notes = Vec::new();
    let mut kept = Vec::new();
    for &k in sort {
        let pinned = match k {
            SortKey::Comm => single(&filter.comms).map(|v| format!("comm: {v}")),
            SortKey::Dso => single(&filter.dsos).map(|v| format!("dso: {v}")),
            SortKey::Sym => single(&filter.symbols).map(|v| format!("symbol: {v}")),
            _ => None,
        };
        match pinned {
            Some(note) => notes.push(note),
            None => kept.push(k),
        }
    }
    if kept.is_empty() {
        kept = sort.to_vec();
    }
    (kept, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_filters_leave_their_column_out() {
        let filter = Filter {
            comms: vec!["wl".into()],
            dsos: vec!["a".into(), "b".into()],
            ..Filter::default()
        };
        let sort = [SortKey::Comm, SortKey::Dso];
        assert_eq!(
            elide(&sort, &filter),
            (vec![SortKey::Dso], vec!["comm: wl".into()])
        );
        // Every column pinned: all stay, the notes are still given.
        let (keys, notes) = elide(&[SortKey::Comm], &filter);
        assert_eq!((keys, notes.len()), (vec![SortKey::Comm], 1));
    }
}

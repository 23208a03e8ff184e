//! The order perf 6.1 lists a metric's events in: the iteration order of the hash map its
//! metric parser collects event names in. perf builds the event string it opens, its error
//! messages and its output rows in that order, so perfkit follows it to say the same
//! thing (which event is missing, which row comes first).
//!
//! The map (libbpf's, as perf uses it): a name hashes to `h = h * 31 + byte` (64-bit), a
//! bucket is the top `bits` of `h * 0x9E3779B97F4A7C15`; the table starts at 4 buckets and
//! doubles before an insert when `(size + 1) * 4 / 3` exceeds the buckets; an entry is put
//! at the head of its bucket; growing walks the old buckets in order, re-inserting each
//! entry at the head of its new bucket; iteration walks the buckets in order.

fn hash(name: &str) -> u64 {
    name.bytes()
        .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
}

fn bucket(h: u64, bits: u32) -> usize {
    (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
}

/// `names` (in the order the formula mentions them; repeats ignored) in perf's order.
pub fn perf_order(names: &[String]) -> Vec<String> {
    let mut bits = 0u32;
    let mut buckets: Vec<Vec<&String>> = Vec::new();
    let mut size = 0usize;
    for n in names {
        if buckets.iter().any(|b| b.contains(&n)) {
            continue;
        }
        if buckets.is_empty() || (size + 1) * 4 / 3 > buckets.len() {
            bits = (bits + 1).max(2);
            let mut grown: Vec<Vec<&String>> = vec![Vec::new(); 1 << bits];
            for old in &buckets {
                for e in old {
                    grown[bucket(hash(e), bits)].insert(0, e);
                }
            }
            buckets = grown;
        }
        buckets[bucket(hash(n), bits)].insert(0, n);
        size += 1;
    }
    buckets.into_iter().flatten().cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(names: &[&str]) -> Vec<String> {
        perf_order(&names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn as_perf_6_1_names_them() {
        // The first two events of perf 6.1's `-M` error messages on an AMD family-19h CPU.
        assert_eq!(
            order(&["ex_ret_brn_misp", "ex_ret_brn"]),
            ["ex_ret_brn", "ex_ret_brn_misp"]
        );
        assert_eq!(
            order(&[
                "l2_request_g1.all_no_prefetch",
                "l2_pf_hit_l2",
                "l2_pf_miss_l2_hit_l3",
                "l2_pf_miss_l2_l3"
            ])[..2],
            ["l2_pf_miss_l2_l3", "l2_pf_hit_l2"]
        );
        let dram: Vec<String> = (0..8)
            .map(|i| format!("dram_channel_data_controller_{i}"))
            .collect();
        let o = perf_order(&dram);
        assert_eq!(
            o[..2],
            [
                "dram_channel_data_controller_4",
                "dram_channel_data_controller_1"
            ]
        );
        assert_eq!(o.len(), 8);
        assert_eq!(order(&["a", "b", "a"]).len(), 2);
    }
}

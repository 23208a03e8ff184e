//! perfkit's metric tables, one per CPU model family it supports.
//!
//! Written for the AMD EPYC machines perfkit is developed and tested on (family 19h,
//! "Zen 3" in AMD's Processor Programming Reference, which perf 6.1 also applies to every
//! family-19h model). Each metric is one of AMD's documented formulas over the core, L3
//! and data-fabric events, under the names perf users know, so `-M NAME` means the same
//! thing with either tool. Events are named as perf names them; they resolve through the
//! event parser (sysfs aliases, libpfm4) where the machine has the PMU.

use super::{CpuId, Metric};

/// The table for `cpu`, with its name.
pub(super) fn for_cpu(cpu: &CpuId) -> Option<(&'static str, &'static [Metric])> {
    match (cpu.vendor.as_str(), cpu.family) {
        ("AuthenticAMD", 0x19) => Some(("amdzen3", AMD_FAMILY_19H)),
        _ => None,
    }
}

const fn m(
    name: &'static str,
    groups: &'static [&'static str],
    description: &'static str,
    expr: &'static str,
) -> Metric {
    Metric {
        name,
        groups,
        description,
        expr,
    }
}

const L2: &[&str] = &["l2_cache"];

/// AMD family 19h.
static AMD_FAMILY_19H: &[Metric] = &[
    m(
        "branch_misprediction_ratio",
        &["branch_prediction"],
        "Execution-Time Branch Misprediction Ratio (Non-Speculative)",
        "d_ratio(ex_ret_brn_misp, ex_ret_brn)",
    ),
    m(
        "all_l2_cache_accesses",
        L2,
        "All L2 Cache Accesses",
        "l2_request_g1.all_no_prefetch + l2_pf_hit_l2 + l2_pf_miss_l2_hit_l3 + l2_pf_miss_l2_l3",
    ),
    m(
        "l2_cache_accesses_from_l2_hwpf",
        L2,
        "L2 Cache Accesses from L2 HWPF",
        "l2_pf_hit_l2 + l2_pf_miss_l2_hit_l3 + l2_pf_miss_l2_l3",
    ),
    m(
        "all_l2_cache_misses",
        L2,
        "All L2 Cache Misses",
        "l2_cache_req_stat.ic_dc_miss_in_l2 + l2_pf_miss_l2_hit_l3 + l2_pf_miss_l2_l3",
    ),
    m(
        "l2_cache_misses_from_l2_hwpf",
        L2,
        "L2 Cache Misses from L2 Cache HWPF",
        "l2_pf_miss_l2_hit_l3 + l2_pf_miss_l2_l3",
    ),
    m(
        "all_l2_cache_hits",
        L2,
        "All L2 Cache Hits",
        "l2_cache_req_stat.ic_dc_hit_in_l2 + l2_pf_hit_l2",
    ),
    m(
        "ic_fetch_miss_ratio",
        L2,
        "Instruction Cache (32B) Fetch Miss Ratio",
        "d_ratio(ic_tag_hit_miss.instruction_cache_miss, ic_tag_hit_miss.all_instruction_cache_accesses)",
    ),
    m(
        "op_cache_fetch_miss_ratio",
        L2,
        "Op Cache (64B) Fetch Miss Ratio",
        "d_ratio(op_cache_hit_miss.op_cache_miss, op_cache_hit_miss.all_op_cache_accesses)",
    ),
    m(
        "l3_read_miss_latency",
        &["l3_cache"],
        "Average L3 Read Miss Latency (in core clocks)",
        "(xi_sys_fill_latency * 16) / xi_ccx_sdp_req1",
    ),
    m(
        "l1_itlb_misses",
        &["tlb"],
        "L1 ITLB Misses",
        "bp_l1_tlb_miss_l2_tlb_hit + bp_l1_tlb_miss_l2_tlb_miss",
    ),
    m(
        "macro_ops_dispatched",
        &["decoder"],
        "Macro-ops Dispatched",
        "de_dis_cops_from_decoder.disp_op_type.any_integer_dispatch + \
         de_dis_cops_from_decoder.disp_op_type.any_fp_dispatch",
    ),
    m(
        "all_remote_links_outbound",
        &["data_fabric"],
        "Approximate: Outbound data bytes for all Remote Links for a node (die)",
        "remote_outbound_data_controller_0 + remote_outbound_data_controller_1 + \
         remote_outbound_data_controller_2 + remote_outbound_data_controller_3",
    ),
    m(
        "nps1_die_to_dram",
        &["data_fabric"],
        "Approximate: Combined DRAM B/bytes of all channels on a NPS1 node (die) (may need \
         --metric-no-group)",
        "dram_channel_data_controller_0 + dram_channel_data_controller_1 + \
         dram_channel_data_controller_2 + dram_channel_data_controller_3 + \
         dram_channel_data_controller_4 + dram_channel_data_controller_5 + \
         dram_channel_data_controller_6 + dram_channel_data_controller_7",
    ),
];

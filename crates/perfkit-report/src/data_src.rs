//! `PERF_SAMPLE_DATA_SRC` decoded as perf 6.1's `script` prints it
//! (`|OP LOAD|LVL L1 hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A`).

/// The bit fields of `union perf_mem_data_src`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Parts {
    op: u64,
    lvl: u64,
    snoop: u64,
    lock: u64,
    dtlb: u64,
    lvl_num: u64,
    remote: u64,
    snoopx: u64,
    blk: u64,
    hops: u64,
}

impl Parts {
    fn of(v: u64) -> Parts {
        let bits = |shift: u32, width: u32| (v >> shift) & ((1 << width) - 1);
        Parts {
            op: bits(0, 5),
            lvl: bits(5, 14),
            snoop: bits(19, 5),
            lock: bits(24, 2),
            dtlb: bits(26, 7),
            lvl_num: bits(33, 4),
            remote: bits(37, 1),
            snoopx: bits(38, 2),
            blk: bits(40, 3),
            hops: bits(43, 3),
        }
    }
}

const MEM_LVL: [&str; 14] = [
    "N/A",
    "HIT",
    "MISS",
    "L1",
    "LFB/MAB",
    "L2",
    "L3",
    "Local RAM",
    "Remote RAM (1 hop)",
    "Remote RAM (2 hops)",
    "Remote Cache (1 hop)",
    "Remote Cache (2 hops)",
    "I/O",
    "Uncached",
];

/// Names of `mem_lvl_num` values perf 6.1 knows (the others print as `L<n>`).
fn lvl_num_name(n: u64) -> Option<&'static str> {
    Some(match n {
        0x09 => "CXL",
        0x0a => "I/O",
        0x0b => "Any cache",
        0x0c => "LFB/MAB",
        0x0d => "RAM",
        0x0e => "PMEM",
        0x0f => "N/A",
        _ => return None,
    })
}

const MEM_HOPS: [&str; 8] = [
    "N/A",
    "core, same node",
    "node, same socket",
    "socket, same board",
    "board",
    "",
    "",
    "",
];
const SNOOP: [&str; 5] = ["N/A", "None", "Hit", "Miss", "HitM"];
const SNOOPX: [&str; 2] = ["Fwd", "Peer"];
const TLB: [&str; 7] = ["N/A", "HIT", "MISS", "L1", "L2", "Walker", "Fault"];

/// Names of the set bits of `m` (bit 0 first) joined by " or ".
fn joined(out: &mut String, mut m: u64, names: &[&str]) -> bool {
    let mut any = false;
    for name in names {
        if m == 0 {
            break;
        }
        if m & 1 != 0 {
            if any {
                out.push_str(" or ");
            }
            out.push_str(name);
            any = true;
        }
        m >>= 1;
    }
    any
}

fn op(out: &mut String, op: u64) {
    out.push_str(if op & 0x01 != 0 {
        "N/A"
    } else if op & 0x02 != 0 {
        "LOAD"
    } else if op & 0x04 != 0 {
        "STORE"
    } else if op & 0x08 != 0 {
        "PFETCH"
    } else if op & 0x10 != 0 {
        "EXEC"
    } else {
        "No"
    });
}

fn lvl(out: &mut String, p: &Parts) {
    let start = out.len();
    let (hit, miss) = (p.lvl & 0x02 != 0, p.lvl & 0x04 != 0);
    let m = p.lvl & !0x06;
    if p.remote != 0 {
        out.push_str("Remote ");
    }
    let mut printed = false;
    if p.hops != 0 {
        out.push_str(MEM_HOPS[p.hops as usize]);
        out.push(' ');
    } else {
        printed = joined(out, m, &MEM_LVL);
    }
    if p.lvl_num != 0 {
        if printed {
            out.push_str(" or ");
        }
        match lvl_num_name(p.lvl_num) {
            Some(n) => out.push_str(n),
            None => {
                out.push('L');
                out.push_str(&p.lvl_num.to_string());
            }
        }
    }
    if out.len() == start {
        out.push_str("N/A");
    }
    if hit {
        out.push_str(" hit");
    }
    if miss {
        out.push_str(" miss");
    }
}

fn snoop(out: &mut String, p: &Parts) {
    let start = out.len();
    joined(out, p.snoop, &SNOOP);
    let mut m = p.snoopx;
    for name in SNOOPX {
        if m & 1 != 0 {
            if out.len() > start {
                out.push_str(" or ");
            }
            out.push_str(name);
        }
        m >>= 1;
    }
    if out.len() == start {
        out.push_str("N/A");
    }
}

fn tlb(out: &mut String, p: &Parts) {
    let (hit, miss) = (p.dtlb & 0x02 != 0, p.dtlb & 0x04 != 0);
    if !joined(out, p.dtlb & !0x06, &TLB) {
        out.push_str("N/A");
    }
    if hit {
        out.push_str(" hit");
    }
    if miss {
        out.push_str(" miss");
    }
}

fn lock(out: &mut String, lock: u64) {
    out.push_str(if lock & 0x01 != 0 {
        "N/A"
    } else if lock & 0x02 != 0 {
        "Yes"
    } else {
        "No"
    });
}

fn blk(out: &mut String, blk: u64) {
    if blk == 0 || blk & 0x01 != 0 {
        out.push_str(" N/A");
        return;
    }
    if blk & 0x02 != 0 {
        out.push_str(" Data");
    }
    if blk & 0x04 != 0 {
        out.push_str(" Addr");
    }
}

/// `data_src` decoded as perf script's `data_src` field shows it after the hex value.
pub fn describe(data_src: u64) -> String {
    let p = Parts::of(data_src);
    let mut out = String::with_capacity(64);
    out.push_str("|OP ");
    op(&mut out, p.op);
    out.push_str("|LVL ");
    lvl(&mut out, &p);
    out.push_str("|SNP ");
    snoop(&mut out, &p);
    out.push_str("|TLB ");
    tlb(&mut out, &p);
    out.push_str("|LCK ");
    lock(&mut out, p.lock);
    out.push_str("|BLK ");
    blk(&mut out, p.blk);
    out
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[test]
    fn software_event_default() {
        // What the kernel reports for a page fault (perf 6.1's text for it).
        assert_eq!(
            describe(0x1e05080021),
            "|OP N/A|LVL N/A or N/A|SNP N/A|TLB N/A|LCK N/A|BLK  N/A"
        );
    }

    #[test]
    fn load_hit() {
        // op LOAD, lvl L1|HIT, snoop None, dtlb L1|HIT, lock no.
        let v = 0x02 | ((0x08 | 0x02) << 5) | (0x02 << 19) | ((0x08 | 0x02) << 26);
        assert_eq!(
            describe(v),
            "|OP LOAD|LVL L1 hit|SNP None|TLB L1 hit|LCK No|BLK  N/A"
        );
    }
}

//! Unnamed code grouped per function: in a stripped library every sampled address of a
//! function without a symbol is its own `[unknown]` (perf's report shows one row per
//! address; a flame graph one box for all of them). Where the file's `.eh_frame` bounds the
//! function, [`group_by_function`] names all its addresses after the function's start,
//! `libgomp.so.1+0x1de40` (a file offset, as perf prints unresolved addresses), so they
//! make one row and one box. The exports do this by default; `report` and `script` only
//! when asked, their default staying perf's.

use crate::{FrameId, Func, Profile};
use perfkit_symbols::FunctionBounds;
use rustc_hash::FxHashMap as HashMap;

/// Name every unnamed user frame that an `.eh_frame` FDE of its file covers after its
/// function's start. A file that is not on this machine, or whose build id differs from
/// the recorded one, is not read (its offsets would name other code). Returns how many
/// frames were renamed.
pub fn group_by_function(p: &mut Profile) -> usize {
    FunctionGrouper::default().group_new(p)
}

/// [`group_by_function`] for a profile still being built (`script` writing each sample as
/// it is built): each call renames the frames made since the last one, each file's bounds
/// read once. A frame's new name depends only on the frame, so renaming the new frames
/// before their first sample is written gives the names renaming them all at the end
/// gives.
#[derive(Debug, Default)]
pub struct FunctionGrouper {
    files: HashMap<(String, Option<Vec<u8>>), Option<FunctionBounds>>,
    /// The frames before this one were looked at.
    next: usize,
}

impl FunctionGrouper {
    /// Rename the unnamed frames of `p` made since the last call; how many were renamed.
    pub fn group_new(&mut self, p: &mut Profile) -> usize {
        let mut renamed = 0;
        let from = std::mem::replace(&mut self.next, p.frames.len());
        for id in from..p.frames.len() {
            let frame = &p.frames[id];
            let func = &p.funcs[frame.func as usize];
            if func.kernel || func.name != "[unknown]" || frame.inlined {
                continue;
            }
            let Some(offset) = frame.map_offset else {
                continue;
            };
            let Some(image) = p.image_of(id as FrameId) else {
                continue;
            };
            if image.is_kernel() || image.path.starts_with('[') || image.path.is_empty() {
                continue;
            }
            let key = (image.path.clone(), image.build_id.clone());
            let short = image.name().to_string();
            let dso = func.dso.clone();
            let bounds = self
                .files
                .entry(key)
                .or_insert_with_key(|(path, id)| load(path, id.as_deref()));
            let Some(start) = bounds.as_ref().and_then(|b| b.function_start(offset)) else {
                continue;
            };
            let named = p.func(Func {
                name: format!("{short}+{start:#x}"),
                dso,
                kernel: false,
            });
            p.set_frame_func(id as FrameId, named);
            renamed += 1;
        }
        renamed
    }
}

/// The function bounds of `path`, when it is the file recorded (same build id, or none
/// recorded).
fn load(path: &str, build_id: Option<&[u8]>) -> Option<FunctionBounds> {
    let data = std::fs::read(path).ok()?;
    let bounds = FunctionBounds::from_elf(&data)?;
    if let Some(want) = build_id {
        let have = bounds.build_id()?;
        // perf pads build ids with zeros to 20 bytes.
        let same = want.len() >= have.len()
            && want[..have.len()] == *have
            && want[have.len()..].iter().all(|&b| b == 0);
        if !same {
            return None;
        }
    }
    Some(bounds)
}

//! NUMA nodes: which the machine has, and where a mapping's pages are.
//!
//! The kernel lists its nodes in /sys/devices/system/node as ranges ("0-1,3"): `online` every
//! node it knows, `has_memory` those with memory (N_MEMORY), the only ones a page can move to.
//! `move_pages(2)` moves pages of a process to given nodes, or with no nodes says where each
//! page is: a node, or a negative errno (-ENOENT for a page not present, -EFAULT for no page
//! table entry).

use std::path::Path;

/// The nodes of a node list ("0-1,3" -> [0, 1, 3]); None when it does not parse.
pub fn parse_node_list(text: &str) -> Option<Vec<u32>> {
    let mut nodes = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                if b < a {
                    return None;
                }
                nodes.extend(a..=b);
            }
            None => nodes.push(part.parse().ok()?),
        }
    }
    Some(nodes)
}

/// The nodes with memory under `sys_root` (/sys): `has_memory`, else `online` (kernels without
/// CONFIG_NUMA have neither: one node, 0).
pub fn memory_nodes_in(sys_root: &Path) -> Vec<u32> {
    let dir = sys_root.join("devices/system/node");
    ["has_memory", "online"]
        .iter()
        .find_map(|f| parse_node_list(&std::fs::read_to_string(dir.join(f)).ok()?))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| vec![0])
}

/// This machine's nodes with memory.
pub fn memory_nodes() -> Vec<u32> {
    memory_nodes_in(Path::new("/sys"))
}

/// A node's (MemTotal, MemFree) in kB from its meminfo ("Node 0 MemFree:  123456 kB").
pub fn parse_node_meminfo(text: &str) -> Option<(u64, u64)> {
    let field = |name: &str| -> Option<u64> {
        text.lines().find_map(|l| {
            let mut w = l.split_whitespace().skip(2);
            (w.next()? == name).then(|| w.next()?.parse().ok())?
        })
    };
    Some((field("MemTotal:")?, field("MemFree:")?))
}

/// (MemTotal, MemFree) in kB of each node with memory under `sys_root` (/sys); None where a
/// node's meminfo cannot be read (a kernel without CONFIG_NUMA has none: the caller uses
/// /proc/meminfo).
pub fn nodes_meminfo_in(sys_root: &Path) -> Option<Vec<(u64, u64)>> {
    let dir = sys_root.join("devices/system/node");
    memory_nodes_in(sys_root)
        .iter()
        .map(|n| {
            parse_node_meminfo(&std::fs::read_to_string(dir.join(format!("node{n}/meminfo"))).ok()?)
        })
        .collect()
}

/// The vm.min_free_kbytes that puts every node's low watermark (1.25 x its min) above its free
/// memory while the node with the most free memory for its size keeps its min watermark at 85 %
/// of it. The kernel splits min_free_kbytes over the zones by size, and an allocation wakes
/// kswapd only where every node of its zonelist is below its low watermark: with the watermark
/// set from the machine's free memory, a node with more free memory than its share takes the
/// allocations and no kswapd wakes (seen on a two-node guest: kswapd reclaimed nothing in 10 s).
/// `nodes`: (MemTotal, MemFree) in kB each.
pub fn pressure_min_free_kb(nodes: &[(u64, u64)]) -> Option<u64> {
    let total: u64 = nodes.iter().map(|n| n.0).sum();
    let most = nodes
        .iter()
        .filter(|n| n.0 > 0)
        .map(|&(t, f)| f as u128 * total as u128 / t as u128)
        .max()?;
    Some((most / 100 * 85) as u64)
}

/// move_pages(2)'s flag: move the pages only this process maps (include/uapi/linux/mempolicy.h).
const MPOL_MF_MOVE: libc::c_int = 1 << 1;

/// Why pages cannot move between nodes here (fewer than two nodes with memory), if so.
pub fn too_few() -> Option<String> {
    let n = memory_nodes().len();
    (n < 2).then(|| {
        format!(
            "needs two NUMA nodes with memory to move pages between; this machine has {n} (memcgtest vm guests have two: --numa-nodes)"
        )
    })
}

/// Where each 4 KiB page of `len` bytes at `addr` in this process is after asking move_pages(2)
/// to move it to `to` (None: only ask where it is). Per page: its node, or the negative errno
/// the kernel gave it (a page that could not move stays where it was and says why).
pub fn move_pages(addr: usize, len: usize, to: Option<u32>) -> std::io::Result<Vec<i32>> {
    const PAGE: usize = 4096;
    const CHUNK: usize = 4096;
    let pages: Vec<*mut libc::c_void> = (0..len.div_ceil(PAGE))
        .map(|i| (addr + i * PAGE) as *mut libc::c_void)
        .collect();
    let mut status = vec![0i32; pages.len()];
    for (p, s) in pages.chunks(CHUNK).zip(status.chunks_mut(CHUNK)) {
        let nodes = to.map(|n| vec![n as i32; p.len()]);
        let nodes_ptr = nodes.as_ref().map_or(std::ptr::null(), |n| n.as_ptr());
        // SAFETY: `p`, `nodes` and `s` hold p.len() entries each; pid 0 is this process; the
        // kernel only reads the addresses.
        let r = unsafe {
            libc::syscall(
                libc::SYS_move_pages,
                0,
                p.len() as libc::c_ulong,
                p.as_ptr(),
                nodes_ptr,
                s.as_mut_ptr(),
                MPOL_MF_MOVE,
            )
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(status)
}

/// mbind(2)'s modes (include/uapi/linux/mempolicy.h).
const MPOL_DEFAULT: libc::c_int = 0;
const MPOL_BIND: libc::c_int = 2;

/// A node mask of one word, as mbind(2) and migrate_pages(2) take it, and the `maxnode` that
/// covers it: the kernel reads maxnode - 1 bits (get_nodes: a historical off by one).
fn node_mask(nodes: impl IntoIterator<Item = u32>) -> ([libc::c_ulong; 1], libc::c_ulong) {
    let mut mask = [0 as libc::c_ulong; 1];
    for n in nodes.into_iter().filter(|n| *n < libc::c_ulong::BITS) {
        mask[0] |= 1 << n;
    }
    (mask, libc::c_ulong::BITS as libc::c_ulong + 1)
}

/// Binds `len` bytes at `addr` to `node` with MPOL_MF_MOVE, so the kernel moves the range's
/// pages that only this process maps there; then sets the range's policy back to the default
/// (the pages stay), so later faults are placed as before.
pub fn mbind_move(addr: usize, len: usize, node: u32) -> std::io::Result<()> {
    let (mask, maxnode) = node_mask([node]);
    // SAFETY: the range is a mapping of this process; the mask holds one word, as maxnode says.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            addr,
            len,
            MPOL_BIND,
            mask.as_ptr(),
            maxnode,
            MPOL_MF_MOVE as libc::c_uint,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: as above; MPOL_DEFAULT takes no mask.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            addr,
            len,
            MPOL_DEFAULT,
            std::ptr::null::<libc::c_ulong>(),
            0 as libc::c_ulong,
            0 as libc::c_uint,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// migrate_pages(2) for this process: every page of it on a node with memory other than `node`
/// moves to `node`. Returns how many pages could not move.
pub fn migrate_process(node: u32) -> std::io::Result<u64> {
    let (old, maxnode) = node_mask(memory_nodes().into_iter().filter(|n| *n != node));
    let (new, _) = node_mask([node]);
    // SAFETY: pid 0 is this process; both masks hold one word, as maxnode says.
    let r = unsafe {
        libc::syscall(
            libc::SYS_migrate_pages,
            0,
            maxnode,
            old.as_ptr(),
            new.as_ptr(),
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(r as u64)
}

/// Pages per node of a move_pages status list (index: node; a page with an error counts in
/// none), and how many had an error.
pub fn pages_per_node(status: &[i32]) -> (Vec<u64>, u64) {
    let max = status.iter().copied().max().unwrap_or(0).max(0) as usize;
    let mut per = vec![0u64; max + 1];
    let mut errors = 0;
    for &s in status {
        match usize::try_from(s) {
            Ok(n) => per[n] += 1,
            Err(_) => errors += 1,
        }
    }
    (per, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pressure_puts_every_node_below_its_low_watermark() {
        let m = "Node 1 MemTotal:        1048576 kB\nNode 1 MemFree:          524288 kB\n";
        assert_eq!(parse_node_meminfo(m), Some((1048576, 524288)));
        assert_eq!(parse_node_meminfo("Node 1 MemFree: 5 kB\n"), None);
        // One node: 85 % of its free memory, as before.
        assert_eq!(pressure_min_free_kb(&[(1000, 600)]), Some(510));
        // Two equal nodes, 100 and 500 free: node 1's share of the min (half) is 85 % of its
        // 500, its low watermark 1.06 x 500; node 0 is below its min.
        let min = pressure_min_free_kb(&[(1000, 100), (1000, 500)]).unwrap();
        assert_eq!(min, 850);
        for (total, free) in [(1000u64, 100u64), (1000, 500)] {
            let low = min * total / 2000 * 5 / 4;
            assert!(low > free, "{low} <= {free}");
        }
        assert_eq!(pressure_min_free_kb(&[]), None);
        let d = tempfile::tempdir().unwrap();
        let n = d.path().join("devices/system/node");
        std::fs::create_dir_all(n.join("node0")).unwrap();
        std::fs::write(n.join("has_memory"), "0\n").unwrap();
        assert_eq!(nodes_meminfo_in(d.path()), None);
        std::fs::write(
            n.join("node0/meminfo"),
            m.replace('1', "0").replace("0048576", "1048576"),
        )
        .unwrap();
        assert_eq!(nodes_meminfo_in(d.path()), Some(vec![(1048576, 524288)]));
    }

    #[test]
    fn node_lists_parse() {
        assert_eq!(parse_node_list("0\n"), Some(vec![0]));
        assert_eq!(parse_node_list("0-1,3"), Some(vec![0, 1, 3]));
        assert_eq!(parse_node_list(""), Some(vec![]));
        assert_eq!(parse_node_list("1-0"), None);
        assert_eq!(parse_node_list("x"), None);
    }

    #[test]
    fn memory_nodes_prefer_has_memory() {
        let d = tempfile::tempdir().unwrap();
        let n = d.path().join("devices/system/node");
        assert_eq!(memory_nodes_in(d.path()), [0]);
        std::fs::create_dir_all(&n).unwrap();
        std::fs::write(n.join("online"), "0-2\n").unwrap();
        assert_eq!(memory_nodes_in(d.path()), [0, 1, 2]);
        std::fs::write(n.join("has_memory"), "0,2\n").unwrap();
        assert_eq!(memory_nodes_in(d.path()), [0, 2]);
    }

    #[test]
    fn node_masks_cover_what_the_kernel_reads() {
        let (mask, maxnode) = node_mask([0, 3]);
        assert_eq!(mask[0], 0b1001);
        // The kernel reads maxnode - 1 bits: the whole word.
        assert_eq!(maxnode - 1, libc::c_ulong::BITS as libc::c_ulong);
        assert_eq!(node_mask([64]).0[0], 0);
    }

    #[test]
    fn status_counts_per_node() {
        assert_eq!(pages_per_node(&[0, 1, 1, -2, 1]), (vec![1, 3], 1));
        assert_eq!(pages_per_node(&[]), (vec![0], 0));
    }

    #[test]
    fn own_pages_have_a_node() {
        let v = vec![1u8; 3 * 4096];
        let addr = (v.as_ptr() as usize) & !4095;
        let status = move_pages(addr, 4096, None).unwrap();
        assert!(status[0] >= 0, "{status:?}");
    }
}

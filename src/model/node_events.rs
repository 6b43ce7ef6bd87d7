//! The memcg events the node counts too. Wherever 6.1 to 6.12 count one of these for a memcg
//! (count_memcg_events and its wrappers), the same code counts it in the node's vm events
//! (__count_vm_events, shown by /proc/vmstat): no group can count more of them than the machine
//! did. Left out: pgscan_direct, pgsteal_direct and pgrefill, which the node does not count
//! for a cgroup's own reclaim (`if (!cgroup_reclaim(sc)) __count_vm_events(...)` in
//! shrink_inactive_list and shrink_active_list), v1's pgpgin and pgpgout (memcg-only charge
//! counts), the workingset_* counts (node statistics with a per-CPU drift, not events).

use super::record::Machine;

/// The most one call counts, in the memcg and the node a moment apart (the two counts are not
/// one atomic step, and reclaim counts a whole list's activations in the memcg folio by folio
/// but in the node once at its end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Batch {
    /// One event per call (a fault, a huge page).
    One,
    /// A folio's pages: up to a PMD-sized huge page.
    Folio,
    /// A reclaim batch: SWAP_CLUSTER_MAX (32) pages isolated at a time, plus the huge page the
    /// last one may be; with the multi-gen LRU a batch is MAX_LRU_BATCH (64 x BITS_PER_LONG).
    Reclaim,
}

impl Batch {
    /// In pages (= events), on `machine`.
    pub fn pages(self, machine: &Machine) -> i64 {
        // A PMD maps a page table's worth of pages: page_size / 8 entries of 8 bytes.
        let pmd = (machine.page_size / 8) as i64;
        match self {
            Batch::One => 1,
            Batch::Folio => pmd,
            Batch::Reclaim if machine.lru_gen => 64 * 64 + pmd,
            Batch::Reclaim => 32 + pmd,
        }
    }
}

/// A memcg event and the /proc/vmstat events whose sum counts each of its events too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeEvent {
    /// The counter (`crate::model::counter`), an event of memory.stat.
    pub counter: &'static str,
    /// /proc/vmstat keys.
    pub node: &'static [&'static str],
    pub batch: Batch,
}

const fn same(counter: &'static str, node: &'static [&'static str], batch: Batch) -> NodeEvent {
    NodeEvent {
        counter,
        node,
        batch,
    }
}

/// Every memcg event the node counts on each path that counts it for a memcg.
pub const NODE_EVENTS: &[NodeEvent] = &[
    // handle_mm_fault; do_swap_page, filemap_fault and shmem_swapin_folio for major faults.
    same("pgfault", &["pgfault"], Batch::One),
    same("pgmajfault", &["pgmajfault"], Batch::One),
    // folio_activate (swap.c) and shrink_folio_list (per folio; the node's at the list's end).
    same("pgactivate", &["pgactivate"], Batch::Reclaim),
    same("pgdeactivate", &["pgdeactivate"], Batch::Reclaim),
    same("pglazyfree", &["pglazyfree"], Batch::Folio),
    same("pglazyfreed", &["pglazyfreed"], Batch::Folio),
    // kswapd never reclaims for a cgroup, so the node counts its scans and steals by kind too.
    same("pgscan_kswapd", &["pgscan_kswapd"], Batch::Reclaim),
    same("pgsteal_kswapd", &["pgsteal_kswapd"], Batch::Reclaim),
    // Every scan and steal, a cgroup's own reclaim's too, by LRU type.
    same("pgscan", &["pgscan_anon", "pgscan_file"], Batch::Reclaim),
    same("pgsteal", &["pgsteal_anon", "pgsteal_file"], Batch::Reclaim),
    same("swpin_zero", &["swpin_zero"], Batch::Folio),
    same("swpout_zero", &["swpout_zero"], Batch::Folio),
    same("zswpin", &["zswpin"], Batch::One),
    same("zswpout", &["zswpout"], Batch::One),
    same("zswpwb", &["zswpwb"], Batch::One),
    same("thp_fault_alloc", &["thp_fault_alloc"], Batch::One),
    same("thp_collapse_alloc", &["thp_collapse_alloc"], Batch::One),
    same("thp_swpout", &["thp_swpout"], Batch::One),
    same("thp_swpout_fallback", &["thp_swpout_fallback"], Batch::One),
];

/// The /proc/vmstat keys of every node event, each once.
pub fn node_keys() -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for k in NODE_EVENTS.iter().flat_map(|e| e.node) {
        if !out.iter().any(|x| x == k) {
            out.push(k.to_string());
        }
    }
    out
}

/// The node event of `counter`, if the node counts it.
pub fn node_event(counter: &str) -> Option<&'static NodeEvent> {
    NODE_EVENTS.iter().find(|e| e.counter == counter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_node_event_is_a_memcg_event() {
        for e in NODE_EVENTS {
            let c = crate::model::counter::counter(e.counter).expect(e.counter);
            assert_eq!(c.kind, crate::model::counter::Kind::Event, "{}", e.counter);
        }
        assert!(node_event("pgscan_direct").is_none());
        assert!(node_event("pgrefill").is_none());
        assert_eq!(
            node_keys().iter().filter(|k| *k == "pgscan_anon").count(),
            1
        );
    }

    #[test]
    fn batches_in_pages() {
        let mut m = Machine {
            cpus: 2,
            page_size: 4096,
            node_drift_pages: 0,
            lru_gen: false,
            top_flushed: true,
        };
        assert_eq!(Batch::One.pages(&m), 1);
        assert_eq!(Batch::Folio.pages(&m), 512);
        assert_eq!(Batch::Reclaim.pages(&m), 544);
        m.lru_gen = true;
        assert_eq!(Batch::Reclaim.pages(&m), 4096 + 512);
    }
}

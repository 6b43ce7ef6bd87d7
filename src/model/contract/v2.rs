//! The promises of Documentation/admin-guide/cgroup-v2.rst about the memory controller.

use super::Class::*;
use super::{Contract, Doc};

const fn c(
    id: &'static str,
    topic: &'static str,
    quote: &'static str,
    condition: &'static str,
    class: super::Class,
) -> Contract {
    Contract {
        id,
        doc: Doc::V2,
        topic,
        quote,
        condition,
        class,
        unjudged: None,
    }
}

const fn not(
    id: &'static str,
    topic: &'static str,
    quote: &'static str,
    class: super::Class,
    why: &'static str,
) -> Contract {
    Contract {
        id,
        doc: Doc::V2,
        topic,
        quote,
        condition: "-",
        class,
        unjudged: Some(why),
    }
}

pub const TRACK_USER: Contract = c(
    "v2.track.user",
    "Memory",
    "Userland memory - page cache and anonymous memory.",
    "a group's tasks fault anonymous memory and write or read files",
    Stat,
);
pub const TRACK_KERNEL: Contract = c(
    "v2.track.kernel",
    "Memory",
    "Kernel data structures such as dentries and inodes.",
    "a task of the group makes files (dentries, inodes: slab) and threads (kernel stacks)",
    Stat,
);
pub const TRACK_SOCK: Contract = c(
    "v2.track.sock",
    "Memory",
    "TCP socket buffers.",
    "a task of the group queues data on a TCP connection it never reads",
    Stat,
);
pub const ROUNDING: Contract = c(
    "v2.bytes.rounding",
    "Memory Interface Files",
    "If a value which is not aligned to PAGE_SIZE is written, the value may be rounded up to the closest PAGE_SIZE multiple when read back.",
    "a limit written with a size that is not a multiple of the page size, read back",
    Knobs,
);
pub const DEFAULTS: Contract = c(
    "v2.knobs.defaults",
    "memory.min, memory.low, memory.high, memory.max, memory.oom.group, memory.swap.high, memory.swap.max",
    "The default is \u{201c}0\u{201d}. … The default is \u{201c}max\u{201d}.",
    "a new group, read before anything is written",
    Knobs,
);
pub const CURRENT: Contract = c(
    "v2.current.subtree",
    "memory.current",
    "The total amount of memory currently being used by the cgroup and its descendants.",
    "a parent whose children charge memory (every group with groups below it)",
    Hierarchy,
);
pub const MIN_PROTECT: Contract = c(
    "v2.min.protect",
    "memory.min",
    "If the memory usage of a cgroup is within its effective min boundary, the cgroup's memory won't be reclaimed under any conditions.",
    "memory.min on a leaf whose parent's limit or memory.reclaim reclaims while a sibling allocates",
    Protection,
);
pub const MIN_OOM: Contract = c(
    "v2.min.oom",
    "memory.min",
    "If there is no unprotected reclaimable memory available, OOM killer is invoked.",
    "a sibling of a group within its memory.min needs more than the parent's limit leaves: the sibling is killed, the protected group keeps its memory",
    Protection,
);
pub const MIN_ANCESTORS: Contract = c(
    "v2.min.ancestors",
    "memory.min",
    "Effective min boundary is limited by memory.min values of all ancestor cgroups.",
    "memory.min on a leaf whose parent has none, under a grandparent whose limit reclaims: the leaf is not protected",
    Protection,
);
pub const MIN_OVERCOMMIT: Contract = c(
    "v2.min.overcommit",
    "memory.min",
    "If there is memory.min overcommitment … each child cgroup will get the part of parent's protection proportional to its actual memory usage below memory.min.",
    "children whose memory.min add up to more than their parent's, under pressure rooted above the parent: together they keep no more than the parent's protection, each at least its share",
    Protection,
);
pub const MIN_UNPOPULATED: Contract = c(
    "v2.min.unpopulated",
    "memory.min",
    "If a memory cgroup is not populated with processes, its memory.min is ignored.",
    "a group with memory.min whose readers have exited, under pressure rooted above it beside a populated one: the empty group loses page cache (every kernel since 4.18 protects it all the same: a known issue)",
    Protection,
);
pub const MIN_PROPORTIONAL: Contract = not(
    "v2.min.proportional",
    "memory.min, memory.low",
    "Above the effective min boundary (or effective low boundary if it is higher), pages are reclaimed proportionally to the overage",
    Protection,
    "a rate, not an amount: how far reclaim gets into each group's overage depends on how many passes the pressure takes, and pressure that lasts takes every overage (protection-tree judges where it stops: at the effective protection)",
);
pub const LOW_PROTECT: Contract = c(
    "v2.low.protect",
    "memory.low",
    "If the memory usage of a cgroup is within its effective low boundary, the cgroup's memory won't be reclaimed unless there is no reclaimable memory available in unprotected cgroups.",
    "memory.low on a leaf whose parent's limit reclaims while an unprotected sibling holds reclaimable page cache",
    Protection,
);
pub const LOW_ANCESTORS: Contract = c(
    "v2.low.ancestors",
    "memory.low",
    "Effective low boundary is limited by memory.low values of all ancestor cgroups.",
    "memory.low on a leaf whose parent has none, under a grandparent whose limit reclaims: the leaf is not protected",
    Protection,
);
pub const LOW_OVERCOMMIT: Contract = c(
    "v2.low.overcommit",
    "memory.low",
    "If there is memory.low overcommitment (child cgroup or cgroups are requiring more protected memory than parent will allow), then each child cgroup will get the part of parent's protection proportional to its actual memory usage below memory.low.",
    "children whose memory.low add up to more than their parent's, under pressure rooted above the parent from a reader of page cache: each keeps at least its share",
    Protection,
);
pub const HIGH_THROTTLE: Contract = c(
    "v2.high.throttle",
    "memory.high",
    "If a cgroup's usage goes over the high boundary, the processes of the cgroup are throttled and put under heavy reclaim pressure.",
    "a group with memory.high whose readers or tasks need more than it",
    High,
);
pub const HIGH_NO_OOM: Contract = c(
    "v2.high.no-oom",
    "memory.high",
    "Going over the high limit never invokes the OOM killer",
    "a task needing more than its group's memory.high, with no swap and no memory.max: it is slowed, never killed",
    High,
);
pub const HIGH_ANCESTOR: Contract = c(
    "v2.high.ancestor",
    "Resource Distribution Models: Limits",
    "A child can only consume up to the configured amount of the resource.",
    "memory.high on a parent, the reads in its child: the parent's high holds the child",
    High,
);
pub const MAX_LIMIT: Contract = c(
    "v2.max.limit",
    "memory.max",
    "Memory usage hard limit. This is the main mechanism to limit memory usage of a cgroup.",
    "a group (or an ancestor) with memory.max whose tasks need more than it",
    Limit,
);
pub const MAX_OOM: Contract = c(
    "v2.max.oom",
    "memory.max",
    "If a cgroup's memory usage reaches this limit and can't be reduced, the OOM killer is invoked in the cgroup.",
    "a task needing more anonymous memory than its group's memory.max, with no swap",
    Oom,
);
pub const MAX_ORDER0: Contract = c(
    "v2.max.order0",
    "memory.max",
    "In default configuration regular 0-order allocations always succeed unless OOM killer chooses current task as a victim.",
    "small tasks beside the one the OOM killer takes: they go on",
    Oom,
);
pub const MAX_NO_OOM_CACHE: Contract = c(
    "v2.max.no-oom-kinds",
    "memory.max",
    "Some kinds of allocations don't invoke the OOM killer. Caller could retry them differently, return into userspace as -ENOMEM or silently ignore in cases like disk readahead.",
    "readers of files several times a group's memory.max: page cache is reclaimed, no task is killed",
    Oom,
);
pub const MAX_LOWERED: Contract = c(
    "v2.max.lowered",
    "Controller Issues and Remedies: Memory",
    "memory.max on the other hand will first set the limit to prevent new charges, and then reclaim and OOM kill until the new limit is met - or the task writing to memory.max is killed.",
    "memory.max written below the group's usage of page cache, and later raised back: once the write returns the usage is within the new limit",
    Limit,
);
pub const RECLAIM_AMOUNT: Contract = c(
    "v2.reclaim.amount",
    "memory.reclaim",
    "If less bytes are reclaimed than the specified amount, -EAGAIN is returned.",
    "memory.reclaim of a group holding more clean page cache than asked: a request that succeeds freed at least what it asked",
    Reclaim,
);
pub const RECLAIM_EAGAIN: Contract = c(
    "v2.reclaim.eagain",
    "memory.reclaim",
    "If less bytes are reclaimed than the specified amount, -EAGAIN is returned.",
    "memory.reclaim asking more than the group holds (anonymous memory, no swap): the write fails with EAGAIN",
    Reclaim,
);
pub const RECLAIM_TARGET: Contract = c(
    "v2.reclaim.target",
    "memory.reclaim",
    "This is a simple interface to trigger memory reclaim in the target cgroup.",
    "memory.reclaim of one group while its sibling holds page cache: the sibling loses none",
    Reclaim,
);
pub const RECLAIM_SWAPPINESS: Contract = c(
    "v2.reclaim.swappiness",
    "memory.reclaim",
    "Specifying a swappiness value instructs the kernel to perform the reclaim with that swappiness value.",
    "memory.reclaim with swappiness=0 of a group holding anonymous memory and page cache, swap on: no anonymous page is swapped out (Linux 6.11+)",
    Reclaim,
);
pub const RECLAIM_NOT_PRESSURE: Contract = not(
    "v2.reclaim.not-pressure",
    "memory.reclaim",
    "the proactive reclaim (triggered by this interface) is not meant to indicate memory pressure on the memory cgroup. Therefore socket memory balancing triggered by the memory reclaim normally is not exercised",
    Reclaim,
    "what the networking layer makes of memory pressure shows in no memcg file: sock counts buffers, not the pressure state",
);
pub const PEAK_MAX: Contract = c(
    "v2.peak.max",
    "memory.peak",
    "The max memory usage recorded for the cgroup and its descendants since either the creation of the cgroup or the most recent reset for that FD.",
    "a group whose usage rises and falls",
    Peak,
);
pub const PEAK_RESET: Contract = c(
    "v2.peak.reset",
    "memory.peak",
    "A write of any non-empty string to this file resets it to the current memory usage for subsequent reads through the same file descriptor.",
    "memory.peak reset through one descriptor after the usage fell from a high: that descriptor reads the usage since, another still reads the old high (Linux 6.12+)",
    Peak,
);
pub const SWAP_PEAK_MAX: Contract = c(
    "v2.swap.peak.max",
    "memory.swap.peak",
    "The max swap usage recorded for the cgroup and its descendants since the creation of the cgroup or the most recent reset for that FD.",
    "a group whose swap usage rises and falls",
    Peak,
);
pub const SWAP_PEAK_RESET: Contract = c(
    "v2.swap.peak.reset",
    "memory.swap.peak",
    "A write of any non-empty string to this file resets it to the current memory usage for subsequent reads through the same file descriptor.",
    "memory.swap.peak reset through one descriptor after swap usage fell from a high (Linux 6.12+); the document's \u{201c}memory usage\u{201d} here is the swap usage, which the file shows",
    Peak,
);
pub const OOMGROUP_KILL: Contract = c(
    "v2.oomgroup.kill",
    "memory.oom.group",
    "If set, all tasks belonging to the cgroup or to its descendants (if the memory cgroup is not a leaf cgroup) are killed together or not at all.",
    "an OOM in a group with memory.oom.group and several tasks",
    Oom,
);
pub const OOMGROUP_PROTECTED: Contract = c(
    "v2.oomgroup.protected",
    "memory.oom.group",
    "Tasks with the OOM protection (oom_score_adj set to -1000) are treated as an exception and are never killed.",
    "an OOM in a group with memory.oom.group, one of its tasks with oom_score_adj -1000: it lives",
    Oom,
);
pub const OOMGROUP_SCOPE: Contract = c(
    "v2.oomgroup.scope",
    "memory.oom.group",
    "If the OOM killer is invoked in a cgroup, it's not going to kill any tasks outside of this cgroup, regardless memory.oom.group values of ancestor cgroups.",
    "an OOM in a limited child of a parent with memory.oom.group, a task in the child's sibling: it lives",
    Oom,
);
pub const EVENTS_HIERARCHICAL: Contract = c(
    "v2.events.hierarchical",
    "memory.events",
    "Note that all fields in this file are hierarchical",
    "events in a child: the parent counts them",
    Events,
);
pub const EVENTS_NOTIFY: Contract = c(
    "v2.events.notify",
    "memory.events",
    "Unless specified otherwise, a value change in this file generates a file modified event.",
    "a watcher (inotify) on the memory.events of a group whose events rise",
    Events,
);
pub const EVENTS_LOCAL_NOTIFY: Contract = c(
    "v2.events.local-notify",
    "memory.events.local",
    "The file modified event generated on this file reflects only the local events.",
    "events in a child of a parent that has none of its own: the parent's memory.events raises an event, its memory.events.local none",
    Events,
);
pub const EVENTS_LOW: Contract = c(
    "v2.events.low",
    "memory.events",
    "low: The number of times the cgroup is reclaimed due to high memory pressure even though its usage is under the low boundary.",
    "a group within memory.low whose parent has nothing else to reclaim (the event rises), and one whose sibling has (it stays)",
    Events,
);
pub const EVENTS_HIGH: Contract = c(
    "v2.events.high",
    "memory.events",
    "high: The number of times processes of the cgroup are throttled and routed to perform direct memory reclaim because the high memory boundary was exceeded.",
    "a group with memory.high whose usage goes above it, and one whose usage stays below",
    Events,
);
pub const EVENTS_MAX: Contract = c(
    "v2.events.max",
    "memory.events",
    "max: The number of times the cgroup's memory usage was about to go over the max boundary. If direct reclaim fails to bring it down, the cgroup goes to OOM state.",
    "a group with memory.max whose usage reaches it, and one whose usage stays below",
    Events,
);
pub const EVENTS_OOM: Contract = c(
    "v2.events.oom",
    "memory.events",
    "oom: The number of time the cgroup's memory usage was reached the limit and allocation was about to fail. This event is not raised if the OOM killer is not considered as an option, e.g. for failed high-order allocations or if caller asked to not retry attempts.",
    "a task needing more anonymous memory than its group's memory.max, with no swap: oom counted; readers of page cache at a limit (readahead does not retry): never counted",
    Events,
);
pub const EVENTS_OOM_KILL: Contract = c(
    "v2.events.oom_kill",
    "memory.events",
    "oom_kill: The number of processes belonging to this cgroup killed by any kind of OOM killer.",
    "an OOM kill in the group",
    Events,
);
pub const EVENTS_OOM_GROUP_KILL: Contract = c(
    "v2.events.oom_group_kill",
    "memory.events",
    "oom_group_kill: The number of times a group OOM has occurred.",
    "an OOM in a group with memory.oom.group",
    Events,
);
pub const EVENTS_LOCAL: Contract = c(
    "v2.events.local",
    "memory.events.local",
    "Similar to memory.events but the fields in the file are local to the cgroup i.e. not hierarchical.",
    "events in a child of a parent that has none of its own",
    Events,
);
pub const STAT_ANON: Contract = c(
    "v2.stat.anon",
    "memory.stat",
    "anon: Amount of memory used in anonymous mappings such as brk(), sbrk(), and mmap(MAP_ANONYMOUS)",
    "tasks holding anonymous memory, their own RssAnon as the truth",
    Stat,
);
pub const STAT_FILE: Contract = c(
    "v2.stat.file",
    "memory.stat",
    "file: Amount of memory used to cache filesystem data, including tmpfs and shared memory.",
    "files the group wrote or read, their page cache (cachestat) as the truth; a memfd",
    Stat,
);
pub const STAT_KERNEL: Contract = c(
    "v2.stat.kernel",
    "memory.stat",
    "kernel: Amount of total kernel memory, including (kernel_stack, pagetables, percpu, vmalloc, slab) in addition to other kernel memory use cases.",
    "threads, files, descriptors, sparse mappings, sockets and groups a task makes",
    Stat,
);
pub const STAT_KERNEL_PARTS: Contract = c(
    "v2.stat.kernel-parts",
    "memory.stat",
    "kernel_stack: … kernel stacks. pagetables: … page tables. percpu: … per-cpu kernel data structures. … vmalloc: … vmap backed memory.",
    "threads (stacks), sparse mappings (page tables), new groups (percpu), a large descriptor table (vmalloc)",
    Stat,
);
pub const STAT_SEC_PAGETABLES: Contract = not(
    "v2.stat.sec_pagetables",
    "memory.stat",
    "sec_pagetables: Amount of memory allocated for secondary page tables, this currently includes KVM mmu allocations on x86 and arm64 and IOMMU page tables.",
    Stat,
    "needs a KVM guest or an IOMMU user inside the test machine: the test VMs run under TCG without either",
);
pub const STAT_SOCK: Contract = c(
    "v2.stat.sock",
    "memory.stat",
    "sock: Amount of memory used in network transmission buffers",
    "a task queueing data on a TCP connection it never reads",
    Stat,
);
pub const STAT_SHMEM: Contract = c(
    "v2.stat.shmem",
    "memory.stat",
    "shmem: Amount of cached filesystem data that is swap-backed, such as tmpfs, shm segments, shared anonymous mmap()s",
    "a task writing a memfd it maps",
    Stat,
);
pub const STAT_ZSWAP: Contract = not(
    "v2.stat.zswap",
    "memory.stat, memory.zswap.*",
    "zswap: Amount of memory consumed by the zswap compression backend. zswapped: Amount of application memory swapped out to zswap.",
    Stat,
    "the test kernels have no zswap (CONFIG_ZSWAP is off in ci/kernel.config, and Debian's 6.1 leaves it disabled at boot)",
);
pub const STAT_MAPPED: Contract = c(
    "v2.stat.file_mapped",
    "memory.stat",
    "file_mapped: Amount of cached filesystem data mapped with mmap()",
    "a task mapping a memfd and a file",
    Stat,
);
pub const STAT_DIRTY: Contract = c(
    "v2.stat.file_dirty",
    "memory.stat",
    "file_dirty: Amount of cached filesystem data that was modified but not yet written back to disk",
    "buffered writes and dirty shared mappings, the files' dirty pages (cachestat) as the truth",
    Stat,
);
pub const STAT_WRITEBACK: Contract = c(
    "v2.stat.file_writeback",
    "memory.stat",
    "file_writeback: Amount of cached filesystem data that was modified and is currently being written back to disk",
    "writeback started early, the files' pages under writeback as the truth",
    Stat,
);
pub const STAT_SWAPCACHED: Contract = c(
    "v2.stat.swapcached",
    "memory.stat",
    "swapcached: Amount of swap cached in memory. The swapcache is accounted against both memory and swap usage.",
    "anonymous memory swapped out and read back in",
    Stat,
);
pub const STAT_THP: Contract = c(
    "v2.stat.thp",
    "memory.stat",
    "anon_thp: … anonymous mappings backed by transparent hugepages file_thp: … shmem_thp: …",
    "huge pages faulted, collapsed (anon, shmem, a read-only file)",
    Stat,
);
pub const STAT_LRU: Contract = c(
    "v2.stat.lru",
    "memory.stat",
    "inactive_anon, active_anon, inactive_file, active_file, unevictable: Amount of memory, swap-backed and filesystem-backed, on the internal memory management lists used by the page reclaim algorithm.",
    "every page a group maps or caches, mlocked memory",
    Stat,
);
pub const STAT_SLAB: Contract = c(
    "v2.stat.slab",
    "memory.stat",
    "slab_reclaimable: Part of \u{201c}slab\u{201d} that might be reclaimed, such as dentries and inodes. … slab: Amount of memory used for storing in-kernel data structures.",
    "a task making many files",
    Stat,
);
pub const STAT_WORKINGSET: Contract = c(
    "v2.stat.workingset",
    "memory.stat",
    "workingset_refault_file: Number of refaults of previously evicted file pages. workingset_activate_anon: Number of refaulted anonymous pages that were immediately activated. … workingset_restore_file: Number of restored file pages which have been detected as an active workingset before they got reclaimed. workingset_nodereclaim: Number of times a shadow node has been reclaimed",
    "a limited group's file read twice, streamed over, read again",
    Stat,
);
pub const STAT_RECLAIM: Contract = c(
    "v2.stat.reclaim",
    "memory.stat",
    "pgscan: Amount of scanned pages (in an inactive LRU list) pgsteal: Amount of reclaimed pages pgscan_kswapd: Amount of scanned pages by kswapd (in an inactive LRU list) … pgsteal_khugepaged: Amount of reclaimed pages by khugepaged",
    "reclaim by the group's limit, by kswapd and by khugepaged",
    Stat,
);
pub const STAT_FAULTS: Contract = c(
    "v2.stat.pgfault",
    "memory.stat",
    "pgfault: Total number of page faults incurred pgmajfault: Number of major page faults incurred",
    "fault loops and tasks touching memory, their own minflt as the truth",
    Stat,
);
pub const STAT_LISTS: Contract = c(
    "v2.stat.lists",
    "memory.stat",
    "pgrefill: Amount of scanned pages (in an active LRU list) pgactivate: Amount of pages moved to the active LRU list pgdeactivate: …",
    "a file read twice (activation), a stream and MADV_COLD (deactivation)",
    Stat,
);
pub const STAT_LAZYFREE: Contract = c(
    "v2.stat.lazyfree",
    "memory.stat",
    "pglazyfree: Amount of pages postponed to be freed under memory pressure pglazyfreed: Amount of reclaimed lazyfree pages",
    "anonymous memory given back with MADV_FREE, then reclaimed",
    Stat,
);
pub const STAT_ZERO: Contract = c(
    "v2.stat.zero",
    "memory.stat",
    "swpin_zero: Number of pages swapped into memory and filled with zero, where I/O was optimized out because the page content was detected to be zero during swapout. … swpout_zero: Number of zero-filled pages swapped out with I/O skipped due to the content being detected as zero.",
    "zero-filled anonymous memory paged out and touched again",
    Stat,
);
pub const STAT_THP_EVENTS: Contract = c(
    "v2.stat.thp-events",
    "memory.stat",
    "thp_fault_alloc: … thp_collapse_alloc: … thp_swpout: … thp_swpout_fallback: Number of transparent hugepages which were split before swapout.",
    "huge pages faulted, collapsed, swapped out whole and split at a swap limit",
    Stat,
);
pub const STAT_NUMA_BALANCING: Contract = not(
    "v2.stat.numa-balancing",
    "memory.stat",
    "numa_pages_migrated: Number of pages migrated by NUMA balancing. numa_pte_updates: … numa_hint_faults: …",
    Stat,
    "needs automatic NUMA balancing (CONFIG_NUMA_BALANCING, off in the project's test kernel) and a task whose memory sits on the node away from its CPU for seconds of hint faults; the test VMs have two nodes (numa-migration moves pages across them with move_pages, which these counters do not count), but no scenario waits for balancing yet",
);
pub const STAT_DEMOTE: Contract = not(
    "v2.stat.demote",
    "memory.stat",
    "pgdemote_kswapd: Number of pages demoted by kswapd. pgdemote_direct: … pgdemote_khugepaged: …",
    Stat,
    "needs memory tiers (a slower memory node to demote to); the test VMs have one tier",
);
pub const NUMA_STAT: Contract = c(
    "v2.numa_stat",
    "memory.numa_stat",
    "This breaks down the cgroup's memory footprint into different types of memory, type-specific details, and other information per node … The entries can refer to the memory.stat.",
    "every group, every node counter that moved",
    Stat,
);
pub const SWAP_CURRENT: Contract = c(
    "v2.swap.current",
    "memory.swap.current",
    "The total amount of swap currently being used by the cgroup and its descendants.",
    "tasks swapped out, their own VmSwap as the truth; a parent of swapping groups",
    Swap,
);
pub const SWAP_HIGH: Contract = c(
    "v2.swap.high",
    "memory.swap.high",
    "If a cgroup's swap usage exceeds this limit, all its further allocations will be throttled",
    "a task whose swap passed memory.swap.high charges more memory",
    Swap,
);
pub const SWAP_MAX: Contract = c(
    "v2.swap.max",
    "memory.swap.max",
    "If a cgroup's swap usage reaches this limit, anonymous memory of the cgroup will not be swapped out.",
    "a task paging out more than memory.swap.max",
    Swap,
);
pub const SWAP_MAX_UNIMPEDED: Contract = c(
    "v2.swap.max.unimpeded",
    "memory.swap.high",
    "Compare to memory.swap.max, which prohibits swapping past a set amount, but lets the cgroup continue unimpeded as long as other memory can be reclaimed.",
    "a group at its memory.max with a small memory.swap.max, a task holding anonymous memory beside a reader of page cache: the swap stays within the limit, nothing is OOM-killed",
    Swap,
);
pub const SWAP_EVENTS: Contract = c(
    "v2.swap.events",
    "memory.swap.events",
    "high: … swap usage was over the high threshold. max: … about to go over the max boundary and swap allocation failed. fail: … swap allocation failed either because of running out of swap system-wide or max limit.",
    "swap usage at and below memory.swap.high and memory.swap.max",
    Swap,
);
pub const ZSWAP_LIMITS: Contract = not(
    "v2.zswap.limits",
    "memory.zswap.max, memory.zswap.writeback",
    "Zswap usage hard limit. … Note that this setting is hierarchical, i.e. the writeback would be implicitly disabled for child cgroups if the upper hierarchy does so.",
    Swap,
    "the test kernels have no zswap (see v2.stat.zswap)",
);
pub const PRESSURE: Contract = c(
    "v2.pressure",
    "memory.pressure",
    "Shows pressure stall information for memory.",
    "a task throttled above its group's memory.high for seconds: the group's some total rises by most of that time (PSI on; Debian's kernels need psi=1)",
    Stat,
);
pub const OWNER_CREATOR: Contract = c(
    "v2.owner.creator",
    "Memory Ownership",
    "A memory area is charged to the cgroup which instantiated it and stays charged to the cgroup until the area is released.",
    "a group reading a file another group already holds in its page cache: the reader is charged nothing",
    Ownership,
);
pub const OWNER_MIGRATE: Contract = c(
    "v2.owner.migrate",
    "Memory Ownership",
    "Migrating a process to a different cgroup doesn't move the memory usages that it instantiated while in the previous cgroup to the new cgroup.",
    "a task holding memory moves to another group, then allocates more and frees",
    Ownership,
);
pub const OWNER_SHARED: Contract = not(
    "v2.owner.shared",
    "Memory Ownership",
    "A memory area may be used by processes belonging to different cgroups. To which cgroup the area will be charged is in-deterministic",
    Ownership,
    "the document leaves it open (in-deterministic), so there is nothing to hold the kernel to",
);
pub const OWNER_DONTNEED: Contract = c(
    "v2.owner.dontneed",
    "Memory Ownership",
    "it may make sense to use POSIX_FADV_DONTNEED to relinquish the ownership of memory areas belonging to the affected files",
    "a group that read a file gives its clean pages back with POSIX_FADV_DONTNEED: its file count falls by them",
    Ownership,
);
pub const LIMITS_OVERCOMMIT: Contract = c(
    "v2.limits.overcommit",
    "Resource Distribution Models: Limits",
    "As limits can be over-committed, all configuration combinations are valid and there is no reason to reject configuration changes or process migrations.",
    "children whose limits and protections add up to more than their parent's, written and read back; tasks moved into them",
    Knobs,
);
pub const PROTECTIONS_ANCESTORS: Contract = c(
    "v2.protection.ancestors",
    "Resource Distribution Models: Protections",
    "A cgroup is protected up to the configured amount of the resource as long as the usages of all its ancestors are under their protected levels.",
    "a protected leaf under a protected parent, pressure rooted above the parent",
    Protection,
);
pub const WB_DOMAIN: Contract = c(
    "v2.wb.domain",
    "Writeback",
    "Both system-wide and per-cgroup dirty memory states are examined and the more restrictive of the two is enforced.",
    "a writer in a group whose limit makes its dirty domain smaller than the machine's",
    Writeback,
);
pub const WB_RATIO: Contract = c(
    "v2.wb.ratio",
    "Writeback",
    "These ratios apply the same to cgroup writeback with the amount of available memory capped by limits imposed by the memory controller and system-wide clean memory.",
    "a writer in a group with memory.max, vm.dirty_ratio in force",
    Writeback,
);
pub const WB_BYTES: Contract = not(
    "v2.wb.bytes",
    "Writeback: vm.dirty_background_bytes, vm.dirty_bytes",
    "For cgroup writeback, this is calculated into ratio against total available memory and applied the same way as vm.dirty[_background]_ratio.",
    Writeback,
    "the ratio a byte limit becomes is taken against the machine's dirtyable memory at the moment balance_dirty_pages runs (global_dirtyable_memory), which no file shows: with vm.dirty_bytes set, dirty-domain cannot bound the group (it says so), and a bound from sampled free memory would be a guess",
);
pub const WB_FS: Contract = not(
    "v2.wb.fs",
    "Writeback",
    "On other filesystems, all writeback IOs are attributed to the root cgroup.",
    Writeback,
    "where writeback I/O is attributed is the io controller's business (io.stat), which memcgtest does not read",
);
pub const WB_FOREIGN: Contract = not(
    "v2.wb.foreign",
    "Writeback",
    "if a particular foreign cgroup becomes the majority over a certain period of time, switches the ownership of the inode to that cgroup.",
    Writeback,
    "inode ownership for writeback shows only in the io controller's attribution, which memcgtest does not read",
);
pub const MOUNT_LOCALEVENTS: Contract = not(
    "v2.mount.localevents",
    "memory_localevents",
    "Only populate memory.events with data for the current cgroup, and not any subtrees.",
    Events,
    "a system-wide mount option of cgroup2: remounting changes the events of every group on the machine, which memcgtest never touches",
);
pub const MOUNT_RECURSIVEPROT: Contract = not(
    "v2.mount.recursiveprot",
    "memory_recursiveprot",
    "Recursively apply memory.min and memory.low protection to entire subtrees, without requiring explicit downward propagation into leaf cgroups.",
    Protection,
    "a system-wide mount option of cgroup2: remounting changes the protection of every group on the machine, which memcgtest never touches",
);
pub const MOUNT_HUGETLB: Contract = not(
    "v2.mount.hugetlb",
    "memory_hugetlb_accounting",
    "Count HugeTLB memory usage towards the cgroup's overall memory usage for the memory controller",
    Stat,
    "a system-wide mount option, and the test kernel has no HugeTLB pool",
);

/// Every promise of cgroup-v2.rst, in the document's order.
pub static ALL: &[&Contract] = &[
    &TRACK_USER,
    &TRACK_KERNEL,
    &TRACK_SOCK,
    &ROUNDING,
    &DEFAULTS,
    &CURRENT,
    &MIN_PROTECT,
    &MIN_OOM,
    &MIN_ANCESTORS,
    &MIN_OVERCOMMIT,
    &MIN_UNPOPULATED,
    &MIN_PROPORTIONAL,
    &LOW_PROTECT,
    &LOW_ANCESTORS,
    &LOW_OVERCOMMIT,
    &HIGH_THROTTLE,
    &HIGH_NO_OOM,
    &HIGH_ANCESTOR,
    &MAX_LIMIT,
    &MAX_OOM,
    &MAX_ORDER0,
    &MAX_NO_OOM_CACHE,
    &MAX_LOWERED,
    &RECLAIM_AMOUNT,
    &RECLAIM_EAGAIN,
    &RECLAIM_TARGET,
    &RECLAIM_SWAPPINESS,
    &RECLAIM_NOT_PRESSURE,
    &PEAK_MAX,
    &PEAK_RESET,
    &SWAP_PEAK_MAX,
    &SWAP_PEAK_RESET,
    &OOMGROUP_KILL,
    &OOMGROUP_PROTECTED,
    &OOMGROUP_SCOPE,
    &EVENTS_HIERARCHICAL,
    &EVENTS_NOTIFY,
    &EVENTS_LOCAL_NOTIFY,
    &EVENTS_LOW,
    &EVENTS_HIGH,
    &EVENTS_MAX,
    &EVENTS_OOM,
    &EVENTS_OOM_KILL,
    &EVENTS_OOM_GROUP_KILL,
    &EVENTS_LOCAL,
    &STAT_ANON,
    &STAT_FILE,
    &STAT_KERNEL,
    &STAT_KERNEL_PARTS,
    &STAT_SEC_PAGETABLES,
    &STAT_SOCK,
    &STAT_SHMEM,
    &STAT_ZSWAP,
    &STAT_MAPPED,
    &STAT_DIRTY,
    &STAT_WRITEBACK,
    &STAT_SWAPCACHED,
    &STAT_THP,
    &STAT_LRU,
    &STAT_SLAB,
    &STAT_WORKINGSET,
    &STAT_RECLAIM,
    &STAT_FAULTS,
    &STAT_LISTS,
    &STAT_LAZYFREE,
    &STAT_ZERO,
    &STAT_THP_EVENTS,
    &STAT_NUMA_BALANCING,
    &STAT_DEMOTE,
    &NUMA_STAT,
    &SWAP_CURRENT,
    &SWAP_HIGH,
    &SWAP_MAX,
    &SWAP_MAX_UNIMPEDED,
    &SWAP_EVENTS,
    &ZSWAP_LIMITS,
    &PRESSURE,
    &OWNER_CREATOR,
    &OWNER_MIGRATE,
    &OWNER_SHARED,
    &OWNER_DONTNEED,
    &LIMITS_OVERCOMMIT,
    &PROTECTIONS_ANCESTORS,
    &WB_DOMAIN,
    &WB_RATIO,
    &WB_BYTES,
    &WB_FS,
    &WB_FOREIGN,
    &MOUNT_LOCALEVENTS,
    &MOUNT_RECURSIVEPROT,
    &MOUNT_HUGETLB,
];

//! The promises of Documentation/admin-guide/cgroup-v1/memory.rst.

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
        doc: Doc::V1,
        topic,
        quote,
        condition,
        class,
        unjudged: None,
    }
}

pub const USAGE: Contract = c(
    "v1.usage",
    "memory.usage_in_bytes, 5.5",
    "show current usage for memory … If you want to know more exact memory usage, you should use RSS+CACHE(+SWAP) value in memory.stat",
    "a group's statistics and page counter while it holds anon, page cache and kernel memory",
    Stat,
);
pub const MEMSW_USAGE: Contract = c(
    "v1.memsw.usage",
    "memory.memsw.usage_in_bytes, 2.4",
    "memsw means memory+swap. … Swap-out means to move account from memory to swap...there is no change in usage of memory+swap.",
    "a group with memory and swap charged, anonymous memory swapped out and back in: memory+swap stays usage + swap",
    Swap,
);
pub const LIMIT: Contract = c(
    "v1.limit",
    "memory.limit_in_bytes, 2.5",
    "When a cgroup goes over its limit, we first try to reclaim memory from the cgroup so as to make space for the new pages that the cgroup has touched.",
    "a group whose readers or writers need more than its limit",
    Limit,
);
pub const MEMSW_LIMIT: Contract = c(
    "v1.memsw.limit",
    "memory.memsw.limit_in_bytes, 2.4",
    "Usage of memory+swap is limited by memsw.limit_in_bytes.",
    "a group whose memory+swap limit is reached",
    Swap,
);
pub const MEMSW_HIT: Contract = c(
    "v1.memsw.hit",
    "2.4.2",
    "When a cgroup hits memory.memsw.limit_in_bytes, it's useless to do swap-out in this cgroup. Then, swap-out will not be done by cgroup routine and file caches are dropped.",
    "a writer whose memory+swap limit equals its memory limit: nothing is swapped, the cache is dropped",
    Swap,
);
pub const FAILCNT: Contract = c(
    "v1.failcnt",
    "memory.failcnt, 5.4",
    "This failcnt(== failure count) shows the number of times that a usage counter hit its limit. When a memory cgroup hits a limit, failcnt increases and memory under it will be reclaimed.",
    "a group whose usage reaches its limit, and one whose usage stays below",
    Events,
);
pub const MEMSW_FAILCNT: Contract = c(
    "v1.memsw.failcnt",
    "memory.memsw.failcnt, 5.4",
    "A memory cgroup provides memory.failcnt and memory.memsw.failcnt files. This failcnt(== failure count) shows the number of times that a usage counter hit its limit.",
    "a group whose memory+swap usage reaches its memsw limit",
    Events,
);
pub const FAILCNT_RESET: Contract = c(
    "v1.failcnt.reset",
    "5.4",
    "You can reset failcnt by writing 0 to failcnt file",
    "a group whose failcnt rose, 0 written to it",
    Knobs,
);
pub const MAX_USAGE: Contract = c(
    "v1.max_usage",
    "memory.max_usage_in_bytes",
    "show max memory usage recorded",
    "a group whose usage rises and falls",
    Peak,
);
pub const SOFT_LIMIT: Contract = c(
    "v1.soft_limit",
    "memory.soft_limit_in_bytes, 7",
    "Writing to memory.soft_limit_in_bytes has no effect and reading it will always return the maximum value.",
    "a soft limit written, read back",
    Knobs,
);
pub const USE_HIERARCHY: Contract = c(
    "v1.use_hierarchy",
    "memory.use_hierarchy, 6.1",
    "Disabling the hierarchical accounting is deprecated. An attempt to do it will result in a failure … writing 1 to memory.use_hierarchy will always pass",
    "0 and 1 written to a group's use_hierarchy",
    Knobs,
);
pub const LIMIT_SUFFIX: Contract = c(
    "v1.limit.write",
    "3",
    "We can use a suffix (k, K, m, M, g or G) to indicate values in kilo, mega or gigabytes. … We can write \u{201c}-1\u{201d} to reset the *.limit_in_bytes(unlimited).",
    "a limit written with a suffix, then -1, read back",
    Knobs,
);
pub const LIMIT_READBACK: Contract = c(
    "v1.limit.readback",
    "memory.limit_in_bytes, 3",
    "A successful write to this file does not guarantee a successful setting of this limit to the value written into the file. This can be due to a number of factors, such as rounding up to page boundaries or the total availability of memory on the system. … # echo 1 > memory.limit_in_bytes # cat memory.limit_in_bytes 4096",
    "1 byte written to a limit and read back: a known failure since the page counters (3.19), which keep whole pages rounded down, so it reads 0",
    Knobs,
);
pub const KMEM_LIMIT: Contract = c(
    "v1.kmem.limit",
    "memory.kmem.limit_in_bytes",
    "Kernel hard limit is not supported since 5.16. Writing any value to do file will not have any effect same as if nokmem kernel parameter was specified.",
    "a kernel memory limit written, read back",
    Knobs,
);
pub const KMEM_USAGE: Contract = c(
    "v1.kmem.usage",
    "memory.kmem.limit_in_bytes, 2.7",
    "Kernel memory is still charged and reported by memory.kmem.usage_in_bytes. … The main \u{201c}kmem\u{201d} counter is fed into the main counter, so kmem charges will also be visible from the user counter.",
    "a group's kernel memory beside its anon and page cache",
    Stat,
);
pub const KMEM_TCP: Contract = c(
    "v1.kmem.tcp",
    "memory.kmem.tcp.*",
    "show current tcp buf memory allocation",
    "a tcp limit written, then a task queueing data on a TCP connection it never reads: memory.kmem.tcp.usage_in_bytes rises by it",
    Stat,
);
pub const FORCE_EMPTY: Contract = c(
    "v1.force_empty",
    "memory.force_empty, 5.1",
    "the cgroup will be reclaimed and as many pages reclaimed as possible.",
    "a group holding clean page cache, 0 written to force_empty",
    Reclaim,
);
pub const SWAPPINESS: Contract = c(
    "v1.swappiness",
    "memory.swappiness, 5.3",
    "limit reclaim enforces that 0 swappiness really prevents from any swapping even if there is a swap storage available. This might lead to memcg OOM killer if there are no file pages to reclaim.",
    "a group with swappiness 0 whose task needs more anonymous memory than its limit, swap on",
    Reclaim,
);
pub const SWAPPINESS_ROOT: Contract = c(
    "v1.swappiness.root",
    "memory.swappiness, 5.3",
    "The tunable in the root cgroup corresponds to the global swappiness setting.",
    "vm.swappiness set, the root group's memory.swappiness read",
    Knobs,
);
pub const STAT_LOCAL: Contract = c(
    "v1.stat.local",
    "memory.stat, 5.2",
    "cache # of bytes of page cache memory. rss # of bytes of anonymous and swap cache memory (includes transparent hugepages). rss_huge … mapped_file … (includes tmpfs/shmem)",
    "files written and read, tasks holding anon (huge too) and a mapped memfd",
    Stat,
);
pub const STAT_PGPG: Contract = c(
    "v1.stat.pgpgin",
    "memory.stat, 5.2",
    "pgpgin # of charging events to the memory cgroup. The charging event happens each time a page is accounted as either mapped anon page(RSS) or cache page(Page Cache) to the cgroup. pgpgout # of uncharging events",
    "a task faulting anonymous memory in base pages, then freeing it",
    Stat,
);
pub const STAT_SWAP: Contract = c(
    "v1.stat.swap",
    "memory.stat, 5.2",
    "swap # of bytes of swap usage swapcached # of bytes of swap cached in memory",
    "tasks swapped out, their VmSwap as the truth",
    Swap,
);
pub const STAT_DIRTY: Contract = c(
    "v1.stat.dirty",
    "memory.stat, 5.2",
    "dirty # of bytes that are waiting to get written back to the disk. writeback # of bytes of file/anon cache that are queued for syncing to disk.",
    "buffered writes, their files' dirty and writeback pages as the truth",
    Writeback,
);
pub const STAT_LRU: Contract = c(
    "v1.stat.lru",
    "memory.stat, 5.2",
    "inactive_anon … active_anon … inactive_file # of bytes of file-backed memory and MADV_FREE anonymous memory (LazyFree pages) on inactive LRU list. active_file … unevictable # of bytes of memory that cannot be reclaimed (mlocked etc).",
    "pages mapped and cached, mlocked memory",
    Stat,
);
pub const HIERARCHICAL_LIMIT: Contract = c(
    "v1.stat.hierarchical_limit",
    "memory.stat, 5.2",
    "hierarchical_memory_limit # of bytes of memory limit with regard to hierarchy under which the memory cgroup is hierarchical_memsw_limit …",
    "a group below a parent whose limit is smaller than its own",
    Hierarchy,
);
pub const STAT_TOTAL: Contract = c(
    "v1.stat.total",
    "memory.stat, 5.2",
    "total_<counter> # hierarchical version of <counter>, which in addition to the cgroup's own value includes the sum of all hierarchical children's values of <counter>",
    "a parent whose children hold memory",
    Hierarchy,
);
pub const NUMA_STAT: Contract = c(
    "v1.numa_stat",
    "memory.numa_stat, 5.6",
    "Each memcg's numa_stat file includes \u{201c}total\u{201d}, \u{201c}file\u{201d}, \u{201c}anon\u{201d} and \u{201c}unevictable\u{201d} per-node page counts including \u{201c}hierarchical_<counter>\u{201d} which sums up all hierarchical children's values in addition to the memcg's own value. … The \u{201c}total\u{201d} count is sum of file + anon + unevictable.",
    "every group holding file and anonymous memory",
    Stat,
);
pub const HIERARCHY_CHARGE: Contract = c(
    "v1.hierarchy.charge",
    "6",
    "all memory usage of e, is accounted to its ancestors up until the root",
    "a parent whose children charge memory",
    Hierarchy,
);
pub const HIERARCHY_RECLAIM: Contract = c(
    "v1.hierarchy.reclaim",
    "6",
    "If one of the ancestors goes over its limit, the reclaim algorithm reclaims from the tasks in the ancestor and the children of the ancestor.",
    "a limited parent whose child reads more than the parent's limit: the parent's usage stays within it",
    Hierarchy,
);
pub const FIRST_TOUCH: Contract = c(
    "v1.shared.first-touch",
    "2.3",
    "Shared pages are accounted on the basis of the first touch approach. The cgroup that first touches a page is accounted for the page.",
    "a group reading a file another group already holds in its page cache: the reader is charged nothing",
    Ownership,
);
pub const UNCHARGE: Contract = c(
    "v1.accounting.uncharge",
    "2.2.1",
    "An RSS page is unaccounted when it's fully unmapped. A PageCache page is unaccounted when it's removed from xarray.",
    "a task holding anonymous memory exits; a file the group wrote is truncated",
    Stat,
);
pub const ACCOUNTING_CHARGE: Contract = c(
    "v1.accounting.charge",
    "2.2.1",
    "RSS pages are accounted at page_fault unless they've already been accounted for earlier. A file page will be accounted for as Page Cache when it's inserted into inode (xarray). While it's mapped into the page tables of processes, duplicate accounting is carefully avoided.",
    "tasks touching anonymous memory, writing and reading files, and mapping them: the group's rss is what its tasks hold, its cache what its files hold in the page cache",
    Stat,
);
pub const SWAPCACHE: Contract = c(
    "v1.accounting.swapcache",
    "2.2.1",
    "Even if RSS pages are fully unmapped (by kswapd), they may exist as SwapCache in the system until they are really freed. Such SwapCaches are also accounted. A swapped-in page is accounted after adding into swapcache.",
    "anonymous memory swapped out and read back in",
    Swap,
);
pub const MIGRATION: Contract = c(
    "v1.accounting.migration",
    "2.2.1",
    "At page migration, accounting information is kept.",
    "page migration by compaction while a group writes and holds dirty pages",
    Stat,
);
pub const RECLAIM_OOM: Contract = c(
    "v1.reclaim.oom",
    "2.5",
    "If the reclaim is unsuccessful, an OOM routine is invoked to select and kill the bulkiest task in the cgroup.",
    "a task needing more anonymous memory than its group's limit, small tasks beside it",
    Oom,
);
pub const TASK_MIGRATION: Contract = c(
    "v1.migration.default",
    "4.2",
    "When a task migrates from one cgroup to another, its charge is not carried forward by default.",
    "a task holding memory moves without charge moving",
    Ownership,
);
pub const REMOVAL: Contract = c(
    "v1.removal",
    "4.3",
    "We move the stats to parent, and no change on the charge except uncharging from the child.",
    "a child holding page cache (no task) is removed: its parent's usage and file count stay",
    Ownership,
);
pub const MOVE_ANON: Contract = c(
    "v1.move.anon",
    "8.2, bit 0",
    "A charge of an anonymous page (or swap of it) used by the target task.",
    "a task holding anon (part of it swapped) moves to a group with move_charge_at_immigrate = 1",
    Ownership,
);
pub const MOVE_FILE: Contract = c(
    "v1.move.file",
    "8.2, bit 1",
    "A charge of file pages (normal file, tmpfs file (e.g. ipc shared memory) and swaps of tmpfs file) mmapped by the target task.",
    "a task mapping a file (dirty, under writeback) moves to a group with move_charge_at_immigrate = 2",
    Ownership,
);
pub const MOVE_DISABLE: Contract = c(
    "v1.move.disable",
    "8.1",
    "It can be enabled (and disabled again) by writing to memory.move_charge_at_immigrate of the destination cgroup.",
    "move_charge_at_immigrate set to 1 and back to 0 before a task moves: nothing is carried",
    Ownership,
);
pub const MOVE_LEADER: Contract = c(
    "v1.move.leader",
    "8.1",
    "Charges are moved only when you move mm->owner, in other words, a leader of a thread group.",
    "a thread of a multi-threaded task, not its leader, moved to a group with move_charge_at_immigrate = 1: nothing is carried",
    Ownership,
);
pub const MOVE_OWN_ONLY: Contract = c(
    "v1.move.own-only",
    "8.2",
    "an account of a page or a swap can be moved only when it is charged to the task's current (old) memory cgroup.",
    "a task mapping page cache another group read first moves with move_charge_at_immigrate 3: its own anonymous memory moves, the other group keeps the file's charge",
    Ownership,
);
pub const THRESHOLDS: Contract = c(
    "v1.thresholds",
    "9",
    "It allows to register multiple memory and memsw thresholds and gets notifications when it crosses. … Application will be notified through eventfd when memory usage crosses threshold in any direction.",
    "eventfd thresholds on memory.usage_in_bytes and memory.memsw.usage_in_bytes, the usage rising through them and falling back",
    Events,
);
pub const OOM_DISABLE: Contract = c(
    "v1.oom_control.disable",
    "10",
    "If OOM-killer is disabled, tasks under cgroup will hang/sleep in memory cgroup's OOM-waitqueue when they request accountable memory. … Then, stopped tasks will work again.",
    "oom_kill_disable = 1 in a group whose task needs more than its limit, then the limit raised: the task waits unkilled (under_oom 1), then goes on",
    Oom,
);
pub const OOM_NOTIFY: Contract = c(
    "v1.oom_control.notify",
    "10",
    "The application will be notified through eventfd when OOM happens.",
    "an eventfd registered on memory.oom_control of a group in which a task is OOM-killed",
    Events,
);
pub const OOM_KILL_COUNT: Contract = c(
    "v1.oom_control.oom_kill",
    "10",
    "oom_kill integer counter The number of processes belonging to this cgroup killed by any kind of OOM killer.",
    "an OOM kill in the group",
    Events,
);
pub const PRESSURE_LEVEL: Contract = c(
    "v1.pressure_level",
    "11",
    "The \u{201c}low\u{201d} level means that the system is reclaiming memory for new allocations. … \u{201c}hierarchy\u{201d}: events always propagate up to the root … \u{201c}local\u{201d}: events are pass-through, i.e. they only receive notifications when memory pressure is experienced in the memcg for which the notification is registered.",
    "a child reclaiming at its limit: its low listener and its parent's low,hierarchy listener are notified, its parent's low,local listener is not",
    Events,
);
pub const PRESSURE_DEFAULT: Contract = c(
    "v1.pressure_level.default",
    "11",
    "By default, events are propagated upward until the event is handled, i.e. the events are not pass-through. … Group B, will receive notification only if there are no event listeners for group C.",
    "a child reclaiming at its limit with a listener of its own: its parent's listener in the default mode hears nothing",
    Events,
);
pub const PRESSURE_UPWARD: Contract = c(
    "v1.pressure_level.upward",
    "11",
    "By default, events are propagated upward until the event is handled … Group B, will receive notification only if there are no event listeners for group C.",
    "a child reclaiming at its limit with no listener of its own: its parent's listener in the default mode is notified",
    Events,
);
pub const ROOT_LIMIT: Contract = c(
    "v1.root",
    "3, 2.5",
    "We cannot set limits on the root cgroup any more.",
    "a limit written to the root group, on a machine of the run's own (a VM): refused with EINVAL",
    Knobs,
);

/// Every promise of cgroup-v1/memory.rst, in the document's order.
pub static ALL: &[&Contract] = &[
    &USAGE,
    &MEMSW_USAGE,
    &LIMIT,
    &MEMSW_LIMIT,
    &MEMSW_HIT,
    &FAILCNT,
    &MEMSW_FAILCNT,
    &FAILCNT_RESET,
    &MAX_USAGE,
    &SOFT_LIMIT,
    &USE_HIERARCHY,
    &LIMIT_SUFFIX,
    &LIMIT_READBACK,
    &KMEM_LIMIT,
    &KMEM_USAGE,
    &KMEM_TCP,
    &FORCE_EMPTY,
    &SWAPPINESS,
    &SWAPPINESS_ROOT,
    &STAT_LOCAL,
    &STAT_PGPG,
    &STAT_SWAP,
    &STAT_DIRTY,
    &STAT_LRU,
    &HIERARCHICAL_LIMIT,
    &STAT_TOTAL,
    &NUMA_STAT,
    &HIERARCHY_CHARGE,
    &HIERARCHY_RECLAIM,
    &FIRST_TOUCH,
    &UNCHARGE,
    &ACCOUNTING_CHARGE,
    &SWAPCACHE,
    &MIGRATION,
    &RECLAIM_OOM,
    &TASK_MIGRATION,
    &REMOVAL,
    &MOVE_ANON,
    &MOVE_FILE,
    &MOVE_DISABLE,
    &MOVE_LEADER,
    &MOVE_OWN_ONLY,
    &THRESHOLDS,
    &OOM_DISABLE,
    &OOM_NOTIFY,
    &OOM_KILL_COUNT,
    &PRESSURE_LEVEL,
    &PRESSURE_DEFAULT,
    &PRESSURE_UPWARD,
    &ROOT_LIMIT,
];

//! Clusters from the machine's topology (thesis Ch. 3: clustered scheduling groups the CPUs that
//! share a cache, so that migrations inside a cluster stay cheap). `--cluster-by l2|l3|llc|numa`
//! groups the run's CPUs by the cache they share (sysfs `cache/index*/shared_cpu_list`) or by
//! NUMA node (`node*/cpulist`); the plan then clusters them as `--cluster-size` would, in that
//! order.

use super::field::*;
use super::TasksetError;
use std::collections::BTreeMap;

/// What CPUs share, as the flag spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Share {
    L2,
    L3,
    /// The last-level cache: the highest cache level sysfs lists.
    Llc,
    Numa,
}

impl std::str::FromStr for Share {
    type Err = TasksetError;
    fn from_str(s: &str) -> Result<Share, TasksetError> {
        match s {
            "l2" => Ok(Share::L2),
            "l3" => Ok(Share::L3),
            "llc" => Ok(Share::Llc),
            "numa" => Ok(Share::Numa),
            o => Err(TasksetError::Invalid(format!(
                "{CLUSTER_BY}: l2, l3, llc or numa, got '{o}'"
            ))),
        }
    }
}

/// Pure: the run's CPUs grouped by the set each shares (`sharing[cpu]`, the CPUs it shares the
/// resource with), in order of their lowest CPU; every cluster must have the same size (the
/// clustered test and root domains are per cluster of equal size). Returns the CPUs in cluster
/// order and the size.
pub fn clusters(
    cpus: &[u32],
    sharing: &BTreeMap<u32, Vec<u32>>,
    what: &str,
) -> Result<(Vec<Vec<u32>>, u32), TasksetError> {
    let mut groups: Vec<Vec<u32>> = Vec::new();
    for &c in cpus {
        let Some(with) = sharing.get(&c) else {
            return Err(TasksetError::Invalid(format!(
                "{CLUSTER_BY} {what}: the machine does not say which CPUs share it with CPU {c}"
            )));
        };
        let mut g: Vec<u32> = with.iter().copied().filter(|x| cpus.contains(x)).collect();
        if !g.contains(&c) {
            g.push(c);
        }
        g.sort_unstable();
        g.dedup();
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    groups.sort();
    // Overlapping groups (a CPU listed in two) would make no partition of the CPUs.
    let total: usize = groups.iter().map(Vec::len).sum();
    if total != cpus.len() {
        return Err(TasksetError::Invalid(format!(
            "{CLUSTER_BY} {what}: the groups {groups:?} overlap; they do not partition CPUs {cpus:?}"
        )));
    }
    let size = groups.first().map_or(0, Vec::len);
    if groups.iter().any(|g| g.len() != size) {
        return Err(TasksetError::Invalid(format!(
            "{CLUSTER_BY} {what}: clusters of unequal size {groups:?}; choose {CPUS} so that each {what} group is whole, or {CLUSTER_SIZE}"
        )));
    }
    Ok((groups, size as u32))
}

/// Pure: a sysfs CPU list (`0-3,8,10-11`).
pub fn parse_list(s: &str) -> Option<Vec<u32>> {
    let mut v = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                if b < a || b - a > 65_535 {
                    return None;
                }
                v.extend(a..=b);
            }
            None => v.push(part.parse().ok()?),
        }
    }
    Some(v)
}

/// Read who shares `share` with each of `cpus` from sysfs.
pub fn read_sharing(share: Share, cpus: &[u32]) -> BTreeMap<u32, Vec<u32>> {
    let sys = std::path::Path::new("/sys/devices/system");
    let mut out = BTreeMap::new();
    if share == Share::Numa {
        for e in std::fs::read_dir(sys.join("node"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with("node") || name[4..].parse::<u32>().is_err() {
                continue;
            }
            if let Some(list) = std::fs::read_to_string(e.path().join("cpulist"))
                .ok()
                .and_then(|t| parse_list(&t))
            {
                for &c in &list {
                    out.insert(c, list.clone());
                }
            }
        }
        return out;
    }
    for &c in cpus {
        let dir = sys.join(format!("cpu/cpu{c}/cache"));
        // (level, shared list) of the unified/data caches.
        let mut caches: Vec<(u32, Vec<u32>)> = Vec::new();
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = e.path();
            let read = |f: &str| std::fs::read_to_string(p.join(f)).ok();
            let (Some(level), Some(kind), Some(list)) =
                (read("level"), read("type"), read("shared_cpu_list"))
            else {
                continue;
            };
            if kind.trim() == "Instruction" {
                continue;
            }
            if let (Ok(l), Some(list)) = (level.trim().parse::<u32>(), parse_list(&list)) {
                caches.push((l, list));
            }
        }
        let want = match share {
            Share::L2 => Some(2),
            Share::L3 => Some(3),
            Share::Llc => caches.iter().map(|(l, _)| *l).max(),
            Share::Numa => None,
        };
        if let Some((_, list)) = caches.into_iter().find(|(l, _)| Some(*l) == want) {
            out.insert(c, list);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(rows: &[(u32, &str)]) -> BTreeMap<u32, Vec<u32>> {
        rows.iter()
            .map(|&(c, l)| (c, parse_list(l).unwrap()))
            .collect()
    }

    #[test]
    fn caches_shared_by_pairs_make_clusters_of_two() {
        // 8 CPUs, SMT siblings (0,4) (1,5) … share an L2; two L3 domains 0-1,4-5 and 2-3,6-7.
        let l2 = m(&[
            (0, "0,4"),
            (1, "1,5"),
            (2, "2,6"),
            (3, "3,7"),
            (4, "0,4"),
            (5, "1,5"),
            (6, "2,6"),
            (7, "3,7"),
        ]);
        let cpus: Vec<u32> = (0..8).collect();
        let (g, size) = clusters(&cpus, &l2, "l2").unwrap();
        assert_eq!(size, 2);
        assert_eq!(g, vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]);
        let l3 = m(&[
            (0, "0-1,4-5"),
            (1, "0-1,4-5"),
            (4, "0-1,4-5"),
            (5, "0-1,4-5"),
            (2, "2-3,6-7"),
            (3, "2-3,6-7"),
            (6, "2-3,6-7"),
            (7, "2-3,6-7"),
        ]);
        let (g, size) = clusters(&cpus, &l3, "l3").unwrap();
        assert_eq!((g, size), (vec![vec![0, 1, 4, 5], vec![2, 3, 6, 7]], 4));
        // Only part of a domain in the run: the part is the cluster.
        let (g, _) = clusters(&[0, 1, 2, 3], &l3, "l3").unwrap();
        assert_eq!(g, vec![vec![0, 1], vec![2, 3]]);
    }

    #[test]
    fn unequal_or_unknown_groups_are_refused() {
        let l3 = m(&[(0, "0-2"), (1, "0-2"), (2, "0-2"), (3, "3")]);
        let e = clusters(&[0, 1, 2, 3], &l3, "l3").unwrap_err().to_string();
        assert!(
            e.contains("clusters of unequal size [[0, 1, 2], [3]]"),
            "{e}"
        );
        let e = clusters(&[0, 9], &l3, "l3").unwrap_err().to_string();
        assert!(e.contains("CPU 9"), "{e}");
        assert_eq!(parse_list("0-2,5,7-8"), Some(vec![0, 1, 2, 5, 7, 8]));
        assert_eq!(parse_list("3-1"), None);
        assert_eq!(parse_list("x"), None);
    }
}
